package update_test

import (
	"flag"
	"testing"
	"time"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
	"github.com/cairndb/cairn/internal/update"
	"github.com/cairndb/cairn/internal/update/updatetest"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expectations of testdata/*.txt from the engine's outcomes (review the diff)")

// TestCorpus runs the data-driven corpus in testdata against the engine in
// process. The same files run over the wire through updatetest with another
// Runner.
func TestCorpus(t *testing.T) {
	cases, err := updatetest.Load("testdata")
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 200 {
		t.Errorf("corpus has %d cases; the issue asks for at least 200", len(cases))
	}
	updatetest.Run(t, cases, runInProcess, *rewrite)
}

// fixedNow is the clock of in-process runs.
var fixedNow = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

// runInProcess does what an update command does with one statement and
// one stored document: parse the update and the filter, match, then apply
// or upsert.
func runInProcess(c *updatetest.Case) (updatetest.Outcome, error) {
	fail := func(err error) (updatetest.Outcome, error) {
		return updatetest.Outcome{Doc: c.Doc, Code: int32(mongoerr.CodeOf(err))}, nil
	}
	opts := update.Options{ArrayFilters: c.ArrayFilters, Multi: c.Multi, Now: fixedNow}
	var err error
	if c.Let != nil {
		if opts.Vars, err = agg.EvalLet(c.Let, fixedNow); err != nil {
			return fail(err)
		}
	}
	if c.Constants != nil {
		if opts.Constants, err = agg.EvalLet(c.Constants, fixedNow); err != nil {
			return fail(err)
		}
	}
	u, err := update.Parse(c.Update, opts)
	if err != nil {
		return fail(err)
	}
	f, err := query.Parse(c.Filter)
	if err != nil {
		return fail(err)
	}
	ctx := update.ApplyContext{
		ArrayPos:  -1,
		Now:       fixedNow,
		Timestamp: func() (uint32, uint32) { return uint32(fixedNow.Unix()), 1 },
		NewID: func() bsoncore.Value {
			return bsoncore.Value{Type: bsoncore.TypeObjectID, Data: []byte{0x65, 0x93, 0x7d, 0x25, 1, 2, 3, 4, 5, 0, 0, 1}}
		},
	}
	if c.Doc != nil {
		r, err := f.Exec(c.Doc)
		if err != nil {
			return fail(err)
		}
		if r.Matched {
			ctx.ArrayPos = r.ArrayPos
			out, modified, err := u.Apply(c.Doc, ctx)
			if err != nil {
				return fail(err)
			}
			return updatetest.Outcome{Doc: out, Modified: modified}, nil
		}
	}
	if !c.Upsert {
		return updatetest.Outcome{Doc: c.Doc}, nil
	}
	out, err := u.Upsert(c.Filter, ctx)
	if err != nil {
		return fail(err)
	}
	return updatetest.Outcome{Doc: out, Upserted: true}, nil
}
