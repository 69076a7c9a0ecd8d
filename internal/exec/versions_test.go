package exec

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
	"github.com/cairndb/cairn/internal/testcorpus"
	"github.com/cairndb/cairn/internal/update"
)

// TestVersionsCorpus runs testdata/versions.txt: each case makes a fresh
// versioned collection, applies its writes, runs its pipeline (which
// starts with $versions) and compares the output, with every BSON
// timestamp replaced by its rank among the output's timestamps ("t1" is
// the earliest), since cluster times differ from run to run. Keys:
//
//	case      the case's name
//	create    the collection's create options (default {"versioning": {"enabled": true}})
//	writes    one write a line: insert <doc> | update <filter> <update> |
//	          delete <filter> (filters select one document)
//	pipeline  the pipeline
//	result    the expected documents, in order
//	error     the expected MongoDB code
//	scan      the VERSIONS_SCAN's keys examined and versions returned: "<keys> <returned>"
func TestVersionsCorpus(t *testing.T) {
	err := testcorpus.ReadStanzas("testdata/versions.txt", func(st []testcorpus.Entry) error {
		vals := map[string]string{}
		for _, e := range st {
			vals[e.Key] = e.Value
		}
		name := fmt.Sprintf("versions.txt:%d %s", st[0].Line+1, vals["case"])
		t.Run(name, func(t *testing.T) { runVersionsCase(t, vals) })
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func runVersionsCase(t *testing.T, c map[string]string) {
	eng, err := engine.Open(t.TempDir(), engine.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	x := New(eng)
	ctx := context.Background()
	ns := engine.Namespace{DB: "db", Coll: "c"}
	opts := `{"versioning": {"enabled": true}}`
	if o, ok := c["create"]; ok {
		opts = o
	}
	if opts != "none" {
		if err := eng.CreateCollection(ns, bson.Raw(mustParse(t, opts))); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range strings.Split(c["writes"], "\n") {
		if w = strings.TrimSpace(w); w != "" {
			applyWrite(t, ctx, x, ns, w)
		}
	}
	var stages []bsoncore.Document
	pv, _ := mustParse(t, `{"p": `+c["pipeline"]+`}`).Lookup("p").ArrayOK()
	vals, _ := pv.Values()
	for _, v := range vals {
		stages = append(stages, v.Document())
	}
	a := Aggregate{NS: ns, Stages: stages}
	src, err := x.Aggregate(ctx, a)
	if want, ok := c["error"]; ok {
		if err == nil {
			_, err = agg.ReadAll(src)
		}
		if got := fmt.Sprint(mongoerr.CodeOf(err)); got != want {
			t.Fatalf("error: got %v (code %s), want code %s", err, got, want)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	docs, err := agg.ReadAll(src)
	if err != nil {
		t.Fatal(err)
	}
	got := normalizeTimes(docs)
	want, err := testcorpus.ParseDocs(c["result"])
	if err != nil {
		t.Fatalf("result: %v", err)
	}
	var wantS []string
	for _, d := range want {
		wantS = append(wantS, testcorpus.RelaxedDoc(d))
	}
	if !slices.Equal(got, wantS) {
		t.Fatalf("result:\n got  %s\n want %s", strings.Join(got, "\n      "), strings.Join(wantS, "\n      "))
	}
	if scan, ok := c["scan"]; ok {
		vs, _, err := x.ExplainVersions(ctx, a, true)
		if err != nil {
			t.Fatal(err)
		}
		defer vs.Close()
		if g := fmt.Sprintf("%d %d", vs.KeysExamined(), vs.NReturned); g != scan {
			t.Fatalf("scan: got keys/returned %s, want %s", g, scan)
		}
	}
}

func mustParse(t *testing.T, s string) bsoncore.Document {
	t.Helper()
	d, err := testcorpus.ParseDoc(s)
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return d
}

// applyWrite runs one line of a case's writes.
func applyWrite(t *testing.T, ctx context.Context, x *Env, ns engine.Namespace, line string) {
	t.Helper()
	verb, rest, _ := strings.Cut(line, " ")
	docs, err := testcorpus.ParseDocs(strings.ReplaceAll(rest, "} {", "}\n{"))
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	sel := func() Selection {
		s, err := NewSelection(ns, docs[0], query.Options{})
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		return s
	}
	switch verb {
	case "insert":
		res, err := x.Insert(ns, docs, engine.InsertOptions{Ordered: true})
		if err == nil && len(res.WriteErrors) > 0 {
			err = res.WriteErrors[0].Err
		}
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
	case "update":
		mod, err := update.ParseDocument(docs[1], update.Options{})
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if _, err := x.Update(ctx, Update{Sel: sel(), Mod: mod}); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
	case "delete":
		if _, err := x.Delete(ctx, Delete{Sel: sel(), Limit: 1}); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
	default:
		t.Fatalf("unknown write %q", line)
	}
}

// normalizeTimes renders docs as relaxed extended JSON with each BSON
// timestamp replaced by "t<rank>" among the distinct timestamps of all
// docs.
func normalizeTimes(docs []bsoncore.Document) []string {
	var ts []uint64
	var walk func(d bsoncore.Document, fn func(*uint64))
	walk = func(d bsoncore.Document, fn func(*uint64)) {
		elems, _ := d.Elements()
		for _, el := range elems {
			v := el.Value()
			switch v.Type {
			case bsoncore.TypeTimestamp:
				a, b := v.Timestamp()
				x := uint64(a)<<32 | uint64(b)
				fn(&x)
			case bsoncore.TypeEmbeddedDocument:
				walk(v.Document(), fn)
			}
		}
	}
	for _, d := range docs {
		walk(d, func(x *uint64) { ts = append(ts, *x) })
	}
	slices.Sort(ts)
	ts = slices.Compact(ts)
	var out []string
	for _, d := range docs {
		out = append(out, testcorpus.RelaxedDoc(renameTimes(d, ts)))
	}
	return out
}

func renameTimes(d bsoncore.Document, ts []uint64) bsoncore.Document {
	idx, b := bsoncore.AppendDocumentStart(nil)
	elems, _ := d.Elements()
	for _, el := range elems {
		v := el.Value()
		switch v.Type {
		case bsoncore.TypeTimestamp:
			a, c := v.Timestamp()
			i, _ := slices.BinarySearch(ts, uint64(a)<<32|uint64(c))
			b = bsoncore.AppendStringElement(b, el.Key(), fmt.Sprintf("t%d", i+1))
		case bsoncore.TypeEmbeddedDocument:
			b = bsoncore.AppendDocumentElement(b, el.Key(), renameTimes(v.Document(), ts))
		default:
			b = append(b, el...)
		}
	}
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}
