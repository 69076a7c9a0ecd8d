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
	"github.com/cairndb/cairn/internal/testcorpus"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Case is one find and its expected outcome.
type Case struct {
	File string // path of the testdata file
	Line int    // line of the "case:" key
	Name string

	Docs       []bsoncore.Document
	Filter     bsoncore.Document // never nil: {} when absent
	Projection bsoncore.Document // nil when absent
	Sort       bsoncore.Document // nil when absent
	Skip       int64
	Limit      int64

	WantIDs   []bsoncore.Value    // nil unless "ids" is given
	WantDocs  []bsoncore.Document // nil unless "result" is given
	WantError int32               // 0 unless "error" is given
	XFail     string

	// expStart and expEnd are the lines (0-based, end exclusive) holding
	// the expectation, for rewriting; stanzaEnd is where to insert one.
	expStart, expEnd, stanzaEnd int
}

// ID is the case's file:line and name, for test names and messages.
func (c *Case) ID() string { return fmt.Sprintf("%s:%d %s", filepath.Base(c.File), c.Line, c.Name) }

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
func Load(dir string) ([]Case, error) { return testcorpus.Load(dir, LoadFile) }

// LoadFile reads one testdata file.
func LoadFile(file string) ([]Case, error) {
	var (
		cases []Case
		docs  []bsoncore.Document
	)
	err := testcorpus.ReadStanzas(file, func(stanza []testcorpus.Entry) error {
		if stanza[0].Key != "case" {
			for _, e := range stanza {
				if e.Key != "docs" {
					return fmt.Errorf("%s:%d: %q outside a case (a stanza without \"case\" may only set docs)", file, e.Line+1, e.Key)
				}
				d, err := testcorpus.ParseDocs(e.Value)
				if err != nil {
					return fmt.Errorf("%s:%d: %v", file, e.Line+1, err)
				}
				docs = d
			}
			return nil
		}
		c, err := buildCase(file, stanza, docs)
		if err != nil {
			return err
		}
		c.stanzaEnd = stanza[len(stanza)-1].End
		cases = append(cases, c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return cases, nil
}

func buildCase(file string, stanza []testcorpus.Entry, docs []bsoncore.Document) (Case, error) {
	c := Case{File: file, Line: stanza[0].Line + 1, Name: stanza[0].Value, Docs: docs, Filter: testcorpus.EmptyDoc(), expStart: -1}
	for _, e := range stanza[1:] {
		errf := func(err error) error { return fmt.Errorf("%s:%d: %s: %v", file, e.Line+1, e.Key, err) }
		var err error
		switch e.Key {
		case "docs":
			c.Docs, err = testcorpus.ParseDocs(e.Value)
		case "filter":
			c.Filter, err = testcorpus.ParseDoc(e.Value)
		case "projection":
			c.Projection, err = testcorpus.ParseDoc(e.Value)
		case "sort":
			c.Sort, err = testcorpus.ParseDoc(e.Value)
		case "skip":
			c.Skip, err = strconv.ParseInt(e.Value, 10, 64)
		case "limit":
			c.Limit, err = strconv.ParseInt(e.Value, 10, 64)
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
		case "error":
			var n int64
			n, err = strconv.ParseInt(e.Value, 10, 32)
			c.WantError = int32(n)
		case "xfail":
			c.XFail = e.Value
		default:
			err = fmt.Errorf("unknown key")
		}
		if err != nil {
			return c, errf(err)
		}
		switch e.Key {
		case "ids", "result", "error":
			if c.expStart >= 0 {
				return c, errf(fmt.Errorf("a case has exactly one of ids, result, error"))
			}
			c.expStart, c.expEnd = e.Line, e.End
		}
	}
	if c.expStart < 0 {
		return c, fmt.Errorf("%s:%d: case %q has no expectation (ids, result or error)", file, c.Line, c.Name)
	}
	return c, nil
}

// Check compares an outcome with the case's expectation.
func (c *Case) Check(o Outcome) error {
	if c.WantError != 0 {
		if o.Code != c.WantError {
			return fmt.Errorf("want error code %d, got code %d (%d documents)", c.WantError, o.Code, len(o.Docs))
		}
		return nil
	}
	if o.Code != 0 {
		return fmt.Errorf("want success, got error code %d", o.Code)
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
// (testcorpus.Suite.Run): xfail cases must keep failing, and with rewrite
// the expectations are replaced by the outcomes (review the diff!).
func Run(t *testing.T, cases []Case, run Runner, rewrite bool) {
	t.Helper()
	suite.Run(t, cases, run, rewrite)
}

var suite = testcorpus.Suite[Case, Outcome]{
	ID:      (*Case).ID,
	XFail:   func(c *Case) string { return c.XFail },
	Check:   (*Case).Check,
	Rewrite: Rewrite,
}

// Rewrite replaces each case's expectation in its file by its outcome,
// keeping the kind of expectation (ids stay ids). Cases marked xfail keep
// their expectation.
func Rewrite(cases []Case, outcomes []Outcome) error {
	var reps []testcorpus.Replacement
	for i := range cases {
		c := &cases[i]
		if c.XFail != "" {
			continue
		}
		reps = append(reps, testcorpus.Replacement{File: c.File, Start: c.expStart, End: c.expEnd, Lines: formatExpectation(c, outcomes[i])})
	}
	return testcorpus.ReplaceLines(reps)
}

func formatExpectation(c *Case, o Outcome) []string {
	if o.Code != 0 {
		return []string{fmt.Sprintf("error: %d", o.Code)}
	}
	if c.WantIDs != nil || c.WantError != 0 {
		var ids []string
		for _, d := range o.Docs {
			ids = append(ids, Relaxed(d.Lookup("_id")))
		}
		return []string{"ids: [" + strings.Join(ids, ", ") + "]"}
	}
	out := []string{"result:"}
	for _, d := range o.Docs {
		out = append(out, "  "+testcorpus.RelaxedDoc(d))
	}
	return out
}

// Relaxed prints a value as compact extended JSON that parses back to the
// same types (see testcorpus.Relaxed).
func Relaxed(v bsoncore.Value) string { return testcorpus.Relaxed(v) }
