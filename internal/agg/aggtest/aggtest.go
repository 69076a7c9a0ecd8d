// Package aggtest runs Cairn's data-driven aggregation corpus: testdata
// files of input documents, a pipeline and the expected outcome. The same
// cases run in-process against package agg and, through another Runner,
// over the wire against a server (aggregate command), so the engine and
// the server are held to one specification.
//
// # File format
//
// A file is a sequence of stanzas separated by blank lines. A stanza is
// "key: value" lines; a line that starts with whitespace continues the
// previous key's value. Lines starting with "#" are comments.
//
//	# A stanza without "case" sets the collections of the cases after it.
//	docs:
//	  {"_id": 1, "a": 5}
//	  {"_id": 2, "a": [1, 10]}
//	coll inventory:
//	  {"_id": 1, "sku": "almonds"}
//
//	case: $match keeps matching documents in order
//	pipeline: [{"$match": {"a": {"$gt": 4}}}]
//	result:
//	  {"_id": 1, "a": 5}
//	  {"_id": 2, "a": [1, 10]}
//
// Keys of a case stanza:
//
//	case          the case's name (required, first)
//	docs          the input collection's documents for this case only
//	coll <name>   documents of another collection ($lookup, $unionWith)
//	pipeline      the pipeline, a JSON array of stages (required)
//	options       {"allowDiskUse": bool, "maxMemory": bytes, "let": {…}}
//	result        expected documents, in order, exactly (types, field order)
//	unordered     expected documents as a multiset
//	count         expected number of documents (for $sample)
//	error         expected MongoDB error code
//	xfail         a known gap: the reason the case is expected to fail
//
// Values are MongoDB extended JSON (relaxed or canonical). A case whose
// pipeline starts with $documents is Collectionless: over the wire it runs
// as aggregate: 1.
//
// Input order: in process, documents enter the pipeline in the order they
// are listed; over the wire, in the order a collection scan returns them,
// which for Cairn is _id order. So list documents in _id order, or do not
// let the expectation depend on input order (sort first, or use
// unordered).
package aggtest

import (
	"fmt"
	"github.com/cairndb/cairn/internal/testcorpus"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Case is one pipeline and its expected outcome.
type Case struct {
	File string // path of the testdata file
	Line int    // line of the "case:" key
	Name string

	Docs        []bsoncore.Document            // the input collection
	Collections map[string][]bsoncore.Document // other collections, by name
	Pipeline    []bsoncore.Document
	Options     Options
	// Collectionless is set when the pipeline starts with $documents.
	Collectionless bool

	WantDocs  []bsoncore.Document // nil unless "result" or "unordered" is given
	Ordered   bool                // WantDocs came from "result"
	WantCount int                 // -1 unless "count" is given
	WantError int32               // 0 unless "error" is given
	XFail     string

	// expStart and expEnd are the lines (0-based, end exclusive) holding
	// the expectation, for rewriting.
	expStart, expEnd int
	expKey           string
}

// Options are a case's aggregate options.
type Options struct {
	AllowDiskUse bool              `json:"allowDiskUse"`
	MaxMemory    int64             `json:"maxMemory"`
	Let          bsoncore.Document `json:"-"` // nil when absent
}

// ID is the case's file:line and name, for test names and messages.
func (c *Case) ID() string { return fmt.Sprintf("%s:%d %s", filepath.Base(c.File), c.Line, c.Name) }

// Outcome is what running a case produced.
type Outcome struct {
	Docs []bsoncore.Document
	// Code is the MongoDB error code the aggregate failed with, 0 if none.
	Code int32
}

// Runner executes a case's pipeline. A returned error is a failure of the
// harness itself (a server that could not be reached), not a MongoDB
// error, which belongs in Outcome.Code.
type Runner func(c *Case) (Outcome, error)

// Load reads every *.txt file of dir, in name order.
func Load(dir string) ([]Case, error) { return testcorpus.Load(dir, LoadFile) }

// LoadFile reads one testdata file.
func LoadFile(file string) ([]Case, error) {
	var (
		cases []Case
		docs  []bsoncore.Document
		colls = map[string][]bsoncore.Document{}
	)
	err := testcorpus.ReadStanzas(file, func(stanza []testcorpus.Entry) error {
		if stanza[0].Key != "case" {
			for _, e := range stanza {
				d, err := testcorpus.ParseDocs(e.Value)
				if err != nil {
					return fmt.Errorf("%s:%d: %v", file, e.Line+1, err)
				}
				switch {
				case e.Key == "docs":
					docs = d
				case strings.HasPrefix(e.Key, "coll "):
					colls[strings.TrimSpace(strings.TrimPrefix(e.Key, "coll "))] = d
				default:
					return fmt.Errorf("%s:%d: %q outside a case (a stanza without \"case\" may only set docs and coll)", file, e.Line+1, e.Key)
				}
			}
			return nil
		}
		c, err := buildCase(file, stanza, docs, colls)
		if err != nil {
			return err
		}
		cases = append(cases, c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return cases, nil
}

func buildCase(file string, stanza []testcorpus.Entry, docs []bsoncore.Document, colls map[string][]bsoncore.Document) (Case, error) {
	c := Case{File: file, Line: stanza[0].Line + 1, Name: stanza[0].Value, Docs: docs, WantCount: -1, expStart: -1}
	c.Collections = make(map[string][]bsoncore.Document, len(colls))
	for k, v := range colls {
		c.Collections[k] = v
	}
	hasPipeline := false
	for _, e := range stanza[1:] {
		errf := func(err error) error { return fmt.Errorf("%s:%d: %s: %v", file, e.Line+1, e.Key, err) }
		var err error
		switch {
		case e.Key == "docs":
			c.Docs, err = testcorpus.ParseDocs(e.Value)
		case strings.HasPrefix(e.Key, "coll "):
			var d []bsoncore.Document
			d, err = testcorpus.ParseDocs(e.Value)
			c.Collections[strings.TrimSpace(strings.TrimPrefix(e.Key, "coll "))] = d
		case e.Key == "pipeline":
			hasPipeline = true
			c.Pipeline, err = parsePipeline(e.Value)
		case e.Key == "options":
			err = parseOptions(e.Value, &c.Options)
		case e.Key == "result", e.Key == "unordered":
			c.WantDocs, err = testcorpus.ParseDocs(e.Value)
			if c.WantDocs == nil {
				c.WantDocs = []bsoncore.Document{}
			}
			c.Ordered = e.Key == "result"
		case e.Key == "count":
			c.WantCount, err = strconv.Atoi(e.Value)
		case e.Key == "error":
			var n int64
			n, err = strconv.ParseInt(e.Value, 10, 32)
			c.WantError = int32(n)
		case e.Key == "xfail":
			c.XFail = e.Value
		default:
			err = fmt.Errorf("unknown key")
		}
		if err != nil {
			return c, errf(err)
		}
		switch e.Key {
		case "result", "unordered", "count", "error":
			if c.expStart >= 0 {
				return c, errf(fmt.Errorf("a case has exactly one of result, unordered, count, error"))
			}
			c.expStart, c.expEnd, c.expKey = e.Line, e.End, e.Key
		}
	}
	if !hasPipeline {
		return c, fmt.Errorf("%s:%d: case %q has no pipeline", file, c.Line, c.Name)
	}
	if c.expStart < 0 {
		return c, fmt.Errorf("%s:%d: case %q has no expectation (result, unordered, count or error)", file, c.Line, c.Name)
	}
	if len(c.Pipeline) > 0 {
		if e, err := c.Pipeline[0].IndexErr(0); err == nil && e.Key() == "$documents" {
			c.Collectionless = true
		}
	}
	return c, nil
}

// parsePipeline reads a JSON array of stage documents. Elements that are
// not documents are kept as {"": value} would be wrong; they are refused.
func parsePipeline(s string) ([]bsoncore.Document, error) {
	v, err := testcorpus.ParseValue(s)
	if err != nil {
		return nil, err
	}
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, fmt.Errorf("want a JSON array of stages")
	}
	vals, err := arr.Values()
	if err != nil {
		return nil, err
	}
	out := make([]bsoncore.Document, 0, len(vals))
	for _, v := range vals {
		doc, ok := v.DocumentOK()
		if !ok {
			return nil, fmt.Errorf("a stage must be a document, got %s", v.Type)
		}
		out = append(out, doc)
	}
	return out, nil
}

func parseOptions(s string, o *Options) error {
	d, err := testcorpus.ParseDoc(s)
	if err != nil {
		return err
	}
	elems, err := d.Elements()
	if err != nil {
		return err
	}
	for _, e := range elems {
		v := e.Value()
		switch e.Key() {
		case "allowDiskUse":
			b, ok := v.BooleanOK()
			if !ok {
				return fmt.Errorf("allowDiskUse: want a boolean")
			}
			o.AllowDiskUse = b
		case "maxMemory":
			n, ok := v.AsInt64OK()
			if !ok {
				return fmt.Errorf("maxMemory: want a number")
			}
			o.MaxMemory = n
		case "let":
			l, ok := v.DocumentOK()
			if !ok {
				return fmt.Errorf("let: want a document")
			}
			o.Let = l
		default:
			return fmt.Errorf("unknown option %q", e.Key())
		}
	}
	return nil
}

func canonical(d bsoncore.Document) string {
	b, err := bson.MarshalExtJSON(bson.Raw(d), true, false)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
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
	if c.WantCount >= 0 {
		if len(o.Docs) != c.WantCount {
			return fmt.Errorf("want %d documents, got %d", c.WantCount, len(o.Docs))
		}
		return nil
	}
	var got, want []string
	for _, d := range o.Docs {
		got = append(got, canonical(d))
	}
	for _, d := range c.WantDocs {
		want = append(want, canonical(d))
	}
	if !c.Ordered {
		slices.Sort(got)
		slices.Sort(want)
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("\nwant %s\ngot  %s", strings.Join(want, "\n     "), strings.Join(got, "\n     "))
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
// keeping its kind (result stays result, unordered stays unordered; an
// error that now succeeds becomes unordered). Cases marked xfail keep
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
	if c.expKey == "count" {
		return []string{fmt.Sprintf("count: %d", len(o.Docs))}
	}
	key := "unordered"
	if c.expKey == "result" {
		key = "result"
	}
	out := []string{key + ":"}
	for _, d := range o.Docs {
		out = append(out, "  "+testcorpus.RelaxedDoc(d))
	}
	return out
}
