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
//	options       {"allowDiskUse": bool, "maxMemory": bytes, "let": {…},
//	              "collation": {…}}
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
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/testcorpus"
)

// Case is one pipeline and its expected outcome.
type Case struct {
	testcorpus.Header

	Docs        []bsoncore.Document            // the input collection
	Collections map[string][]bsoncore.Document // other collections, by name
	Pipeline    []bsoncore.Document
	Options     Options
	// Collectionless is set when the pipeline starts with $documents.
	Collectionless bool

	WantDocs  []bsoncore.Document // nil unless "result" or "unordered" is given
	Ordered   bool                // WantDocs came from "result"
	WantCount int                 // -1 unless "count" is given
}

// Options are a case's aggregate options.
type Options struct {
	AllowDiskUse bool              `json:"allowDiskUse"`
	MaxMemory    int64             `json:"maxMemory"`
	Let          bsoncore.Document `json:"-"` // nil when absent
	// Collation is the aggregate's collation document (nil when absent:
	// the simple collation).
	Collation bsoncore.Document `json:"-"`
}

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
func Load(dir string) ([]Case, error) { return corpus.Load(dir) }

// LoadFile reads one testdata file.
func LoadFile(file string) ([]Case, error) { return corpus.LoadFile(file) }

var corpus = testcorpus.Corpus[Case, Outcome]{
	Expectations: []string{"result", "unordered", "count"},
	Template:     func() Case { return Case{WantCount: -1} },
	Default: func(tmpl *Case, e testcorpus.Entry) error {
		if e.Key != "docs" && !strings.HasPrefix(e.Key, "coll ") {
			return fmt.Errorf("outside a case (a stanza without \"case\" may only set docs and coll)")
		}
		return setInput(tmpl, e)
	},
	Set:    set,
	Finish: finish,
	Header: func(c *Case) *testcorpus.Header { return &c.Header },
	Check:  (*Case).Check,
	Format: formatExpectation,
}

// setInput reads docs or "coll <name>". Collections is copied before it
// changes: cases share the map of the defaults they started from.
func setInput(c *Case, e testcorpus.Entry) error {
	d, err := testcorpus.ParseDocs(e.Value)
	if err != nil {
		return err
	}
	if e.Key == "docs" {
		c.Docs = d
		return nil
	}
	c.Collections = maps.Clone(c.Collections)
	if c.Collections == nil {
		c.Collections = map[string][]bsoncore.Document{}
	}
	c.Collections[strings.TrimSpace(strings.TrimPrefix(e.Key, "coll "))] = d
	return nil
}

func set(c *Case, e testcorpus.Entry) error {
	var err error
	switch {
	case e.Key == "docs", strings.HasPrefix(e.Key, "coll "):
		err = setInput(c, e)
	case e.Key == "pipeline":
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
	default:
		err = fmt.Errorf("unknown key")
	}
	return err
}

func finish(c *Case) error {
	if c.Pipeline == nil {
		return fmt.Errorf("no pipeline")
	}
	if c.Collections == nil {
		c.Collections = map[string][]bsoncore.Document{}
	}
	if len(c.Pipeline) > 0 {
		if e, err := c.Pipeline[0].IndexErr(0); err == nil && e.Key() == "$documents" {
			c.Collectionless = true
		}
	}
	return nil
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
		case "collation":
			c, ok := v.DocumentOK()
			if !ok {
				return fmt.Errorf("collation: want a document")
			}
			o.Collation = c
		default:
			return fmt.Errorf("unknown option %q", e.Key())
		}
	}
	return nil
}

// Check compares an outcome with the case's expectation.
func (c *Case) Check(o Outcome) error {
	if done, err := c.CheckCode(o.Code); done {
		return err
	}
	if c.WantCount >= 0 {
		if len(o.Docs) != c.WantCount {
			return fmt.Errorf("want %d documents, got %d", c.WantCount, len(o.Docs))
		}
		return nil
	}
	var got, want []string
	for _, d := range o.Docs {
		got = append(got, testcorpus.CanonicalDoc(d))
	}
	for _, d := range c.WantDocs {
		want = append(want, testcorpus.CanonicalDoc(d))
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
// (testcorpus.Corpus.Run): xfail cases must keep failing, and with rewrite
// the expectations are replaced by the outcomes (review the diff!),
// keeping their kind (result stays result, unordered stays unordered; an
// error that now succeeds becomes unordered).
func Run(t *testing.T, cases []Case, run Runner, rewrite bool) {
	t.Helper()
	corpus.Run(t, cases, run, rewrite)
}

func formatExpectation(c *Case, o Outcome) []string {
	if o.Code != 0 {
		return []string{fmt.Sprintf("error: %d", o.Code)}
	}
	if c.ExpKey == "count" {
		return []string{fmt.Sprintf("count: %d", len(o.Docs))}
	}
	key := "unordered"
	if c.ExpKey == "result" {
		key = "result"
	}
	out := []string{key + ":"}
	for _, d := range o.Docs {
		out = append(out, "  "+testcorpus.RelaxedDoc(d))
	}
	return out
}
