// Package querytest runs Cairn's data-driven query corpus: testdata files of
// documents, a find (filter, projection, sort, skip, limit) and the
// expected outcome. The same cases run in-process against package query
// and, through another Runner, over the wire against a server, so the
// engine and the server are held to one specification.
//
// # File format
//
// A file is a sequence of stanzas separated by blank lines. A stanza is
// "key: value" lines; a line that starts with whitespace continues the
// previous key's value. Lines starting with "#" are comments.
//
//	# A stanza without "case" sets the documents of the cases after it.
//	docs:
//	  {"_id": 1, "a": 5}
//	  {"_id": 2, "a": [1, 10]}
//
//	case: $gt matches numbers only
//	filter: {"a": {"$gt": 4}}
//	ids: [1, 2]
//
// Keys of a case stanza:
//
//	case        the case's name (required, first)
//	docs        documents for this case only (extended JSON, one or more)
//	filter      the filter (default {})
//	projection  the projection
//	sort        the sort
//	skip, limit integers
//	collation   the collation the filter and sort compare strings by
//	ids         expected _id values, a JSON array
//	result      expected documents, exactly (types and field order)
//	error       expected MongoDB error code
//	xfail       a known gap: the reason the case is expected to fail
//
// Values are MongoDB extended JSON (relaxed or canonical). Without a sort,
// the order of results is not part of the expectation: ids and result are
// compared as multisets. With one, order matters.
package querytest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/testcorpus"
)

// Case is one find and its expected outcome.
type Case struct {
	testcorpus.Header
	testcorpus.Find

	Docs []bsoncore.Document
	// Indexes are index specifications to create before the find (a text
	// index for $text); a collection scan runner reads them as it needs.
	Indexes []bsoncore.Document

	WantIDs  []bsoncore.Value    // nil unless "ids" is given
	WantDocs []bsoncore.Document // nil unless "result" is given
}

// Outcome is what running a case produced.
type Outcome struct {
	Docs []bsoncore.Document
	// Code is the MongoDB error code the find failed with, 0 if it did not.
	Code int32
}

// Runner executes a case's find. A returned error is a failure of the
// harness itself (a server that could not be reached), not a MongoDB error,
// which belongs in Outcome.Code.
type Runner func(c *Case) (Outcome, error)

// Load reads every *.txt file of dir, in name order.
func Load(dir string) ([]Case, error) { return corpus.Load(dir) }

// LoadFile reads one testdata file.
func LoadFile(file string) ([]Case, error) { return corpus.LoadFile(file) }

var corpus = testcorpus.Corpus[Case, Outcome]{
	Expectations: []string{"ids", "result"},
	Template:     func() Case { return Case{Find: testcorpus.Find{Filter: testcorpus.EmptyDoc()}} },
	Default: func(tmpl *Case, e testcorpus.Entry) error {
		var err error
		switch e.Key {
		case "docs":
			tmpl.Docs, err = testcorpus.ParseDocs(e.Value)
		case "indexes":
			tmpl.Indexes, err = testcorpus.ParseDocs(e.Value)
		default:
			return fmt.Errorf("outside a case (a stanza without \"case\" may only set docs and indexes)")
		}
		return err
	},
	Set:    set,
	Header: func(c *Case) *testcorpus.Header { return &c.Header },
	Check:  (*Case).Check,
	Format: formatExpectation,
}

func set(c *Case, e testcorpus.Entry) error {
	var err error
	switch e.Key {
	case "docs":
		c.Docs, err = testcorpus.ParseDocs(e.Value)
	case "indexes":
		c.Indexes, err = testcorpus.ParseDocs(e.Value)
	case "ids":
		c.WantIDs, err = testcorpus.ParseValues(e.Value)
		if c.WantIDs == nil {
			c.WantIDs = []bsoncore.Value{}
		}
	case "result":
		c.WantDocs, err = testcorpus.ParseDocs(e.Value)
		if c.WantDocs == nil {
			c.WantDocs = []bsoncore.Document{}
		}
	default:
		var ok bool
		if ok, err = c.Find.Set(e); !ok {
			err = fmt.Errorf("unknown key")
		}
	}
	return err
}

// Check compares an outcome with the case's expectation.
func (c *Case) Check(o Outcome) error {
	if done, err := c.CheckCode(o.Code); done {
		return err
	}
	var got, want []string
	if c.WantIDs != nil {
		for _, d := range o.Docs {
			got = append(got, testcorpus.Canonical(d.Lookup("_id")))
		}
		for _, v := range c.WantIDs {
			want = append(want, testcorpus.Canonical(v))
		}
	} else {
		for _, d := range o.Docs {
			got = append(got, testcorpus.CanonicalDoc(d))
		}
		for _, d := range c.WantDocs {
			want = append(want, testcorpus.CanonicalDoc(d))
		}
	}
	if c.Sort == nil {
		slices.Sort(got)
		slices.Sort(want)
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("\nwant %s\ngot  %s", strings.Join(want, " "), strings.Join(got, " "))
	}
	return nil
}

// Run runs every case as a subtest through the shared corpus runner
// (testcorpus.Corpus.Run): xfail cases must keep failing, and with rewrite
// the expectations are replaced by the outcomes (review the diff!), ids
// staying ids.
func Run(t *testing.T, cases []Case, run Runner, rewrite bool) {
	t.Helper()
	corpus.Run(t, cases, run, rewrite)
}

func formatExpectation(c *Case, o Outcome) []string {
	if o.Code != 0 {
		return []string{fmt.Sprintf("error: %d", o.Code)}
	}
	if c.WantIDs != nil || c.WantError != 0 {
		var ids []string
		for _, d := range o.Docs {
			ids = append(ids, testcorpus.Relaxed(d.Lookup("_id")))
		}
		return []string{"ids: [" + strings.Join(ids, ", ") + "]"}
	}
	out := []string{"result:"}
	for _, d := range o.Docs {
		out = append(out, "  "+testcorpus.RelaxedDoc(d))
	}
	return out
}
