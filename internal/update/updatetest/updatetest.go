// Package updatetest runs Cairn's data-driven update corpus: testdata files
// of a stored document, an update statement and the expected document or
// error code. The same cases run in-process against package update and,
// through another Runner, over the wire against a server, so the engine and
// the server are held to one specification.
//
// # File format
//
// A file is a sequence of stanzas separated by blank lines. A stanza is
// "key: value" lines; a line that starts with whitespace continues the
// previous key's value. Lines starting with "#" are comments.
//
//	# A stanza without "case" sets the document of the cases after it.
//	doc: {"_id": 1, "a": 5}
//
//	case: $inc adds to an int32
//	update: {"$inc": {"a": 2}}
//	result: {"_id": 1, "a": 7}
//
// Keys of a case stanza:
//
//	case          the case's name (required, first)
//	doc           the stored document for this case only; "doc: none"
//	              means the collection is empty (an upsert inserts)
//	filter        the statement's filter (default {}); it must match doc,
//	              or the statement matches nothing (an upsert then inserts)
//	update        the statement's "u": an update document or a pipeline
//	arrayFilters  the statement's arrayFilters, a JSON array
//	let           the update command's let document (pipeline updates)
//	c             the statement's constants c (pipeline updates)
//	upsert        true for upsert: true
//	multi         true for multi: true
//	result        the expected document afterwards: the updated one, the
//	              upserted one, or the unchanged one
//	modified      true/false: whether the update counts in nModified; by
//	              default, whether result differs from doc (false for an
//	              upsert's insert)
//	error         expected MongoDB error code instead of a result
//	generatedId   true: the result's _id is generated (an ObjectId, first);
//	              result is written without it
//	volatile      comma-separated paths whose values depend on the clock
//	              ($currentDate): compared by type only
//	xfail         a known gap: the reason the case is expected to fail
//
// Values are MongoDB extended JSON (relaxed or canonical); results are
// compared exactly: types, values and field order.
package updatetest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/testcorpus"
)

// Case is one update statement applied to one stored document.
type Case struct {
	testcorpus.Header

	Doc          bsoncore.Document   // nil: the collection is empty
	Filter       bsoncore.Document   // never nil: {} when absent
	Update       bsoncore.Value      // a document or an array
	ArrayFilters []bsoncore.Document // nil when absent
	Let          bsoncore.Document   // the command's let, nil when absent
	Constants    bsoncore.Document   // the statement's c, nil when absent
	Upsert       bool
	Multi        bool

	WantDoc      bsoncore.Document // nil unless "result" is given
	WantModified *bool             // nil unless "modified" is given
	GeneratedID  bool
	Volatile     []string
}

// Outcome is what running a case produced.
type Outcome struct {
	// Doc is the document afterwards: the updated, unchanged or inserted
	// one (nil if the collection is empty).
	Doc bsoncore.Document
	// Modified is whether the update counted in nModified.
	Modified bool
	// Upserted is whether the statement inserted Doc.
	Upserted bool
	// Code is the MongoDB error code the update failed with, 0 if none.
	Code int32
}

// Runner executes a case's update. A returned error is a failure of the
// harness itself (a server that could not be reached), not a MongoDB error,
// which belongs in Outcome.Code.
type Runner func(c *Case) (Outcome, error)

// Load reads every *.txt file of dir, in name order.
func Load(dir string) ([]Case, error) { return corpus.Load(dir) }

// LoadFile reads one testdata file.
func LoadFile(file string) ([]Case, error) { return corpus.LoadFile(file) }

var corpus = testcorpus.Corpus[Case, Outcome]{
	Expectations: []string{"result"},
	Template:     func() Case { return Case{Filter: testcorpus.EmptyDoc()} },
	Default: func(tmpl *Case, e testcorpus.Entry) error {
		if e.Key != "doc" {
			return fmt.Errorf("outside a case (a stanza without \"case\" may only set doc)")
		}
		var err error
		tmpl.Doc, err = parseDocOrNone(e.Value)
		return err
	},
	Set: set,
	Finish: func(c *Case) error {
		if c.Update.Type == 0 {
			return fmt.Errorf("no update")
		}
		return nil
	},
	Header: func(c *Case) *testcorpus.Header { return &c.Header },
	Check:  (*Case).Check,
	Format: func(c *Case, o Outcome) []string {
		if o.Code != 0 {
			return []string{fmt.Sprintf("error: %d", o.Code)}
		}
		return []string{"result: " + testcorpus.RelaxedDoc(o.Doc)}
	},
	// A generated _id or a clock's value cannot be written back.
	Keep: func(c *Case) bool { return c.GeneratedID || len(c.Volatile) > 0 },
}

func set(c *Case, e testcorpus.Entry) error {
	var err error
	switch e.Key {
	case "doc":
		c.Doc, err = parseDocOrNone(e.Value)
	case "filter":
		c.Filter, err = testcorpus.ParseDoc(e.Value)
	case "update":
		c.Update, err = testcorpus.ParseValue(e.Value)
	case "arrayFilters":
		var vals []bsoncore.Value
		vals, err = testcorpus.ParseValues(e.Value)
		for _, v := range vals {
			d, ok := v.DocumentOK()
			if !ok {
				err = fmt.Errorf("arrayFilters must hold documents")
				break
			}
			c.ArrayFilters = append(c.ArrayFilters, d)
		}
	case "let":
		c.Let, err = testcorpus.ParseDoc(e.Value)
	case "c":
		c.Constants, err = testcorpus.ParseDoc(e.Value)
	case "upsert":
		c.Upsert, err = strconv.ParseBool(e.Value)
	case "multi":
		c.Multi, err = strconv.ParseBool(e.Value)
	case "result":
		c.WantDoc, err = testcorpus.ParseDoc(e.Value)
	case "modified":
		var b bool
		b, err = strconv.ParseBool(e.Value)
		c.WantModified = &b
	case "generatedId":
		c.GeneratedID, err = strconv.ParseBool(e.Value)
	case "volatile":
		for _, p := range strings.Split(e.Value, ",") {
			c.Volatile = append(c.Volatile, strings.TrimSpace(p))
		}
	default:
		err = fmt.Errorf("unknown key")
	}
	return err
}

func parseDocOrNone(s string) (bsoncore.Document, error) {
	if s == "none" {
		return nil, nil
	}
	return testcorpus.ParseDoc(s)
}

func canonicalDoc(d bsoncore.Document) string {
	if d == nil {
		return "<none>"
	}
	return testcorpus.CanonicalDoc(d)
}

// Check compares an outcome with the case's expectation.
func (c *Case) Check(o Outcome) error {
	if done, err := c.CheckCode(o.Code); done {
		return err
	}
	got, want := o.Doc, c.WantDoc
	if c.GeneratedID {
		if got == nil {
			return fmt.Errorf("want a document with a generated _id, got none")
		}
		elems, err := got.Elements()
		if err != nil || len(elems) == 0 || elems[0].Key() != "_id" || elems[0].Value().Type != bsoncore.TypeObjectID {
			return fmt.Errorf("want a generated ObjectId _id first, got %s", canonicalDoc(got))
		}
		got = removeFirst(got)
	}
	for _, p := range c.Volatile {
		var err error
		if got, want, err = blankVolatile(got, want, p); err != nil {
			return err
		}
	}
	if g, w := canonicalDoc(got), canonicalDoc(want); g != w {
		return fmt.Errorf("\nwant %s\ngot  %s", w, g)
	}
	wantMod := !o.Upserted && canonicalDoc(c.Doc) != canonicalDoc(c.WantDoc)
	if c.WantModified != nil {
		wantMod = *c.WantModified
	}
	if len(c.Volatile) == 0 && o.Modified != wantMod {
		return fmt.Errorf("modified = %v, want %v", o.Modified, wantMod)
	}
	return nil
}

func removeFirst(d bsoncore.Document) bsoncore.Document {
	elems, _ := d.Elements()
	b := bsoncore.NewDocumentBuilder()
	for _, e := range elems[1:] {
		b.AppendValue(e.Key(), e.Value())
	}
	return b.Build()
}

// blankVolatile checks that the value at dotted path p has the same type in
// got and want, and replaces both values by null.
func blankVolatile(got, want bsoncore.Document, p string) (bsoncore.Document, bsoncore.Document, error) {
	parts := strings.Split(p, ".")
	g, err := got.LookupErr(parts...)
	if err != nil {
		return nil, nil, fmt.Errorf("volatile path %s missing from the outcome %s", p, canonicalDoc(got))
	}
	w, err := want.LookupErr(parts...)
	if err != nil {
		return nil, nil, fmt.Errorf("volatile path %s missing from the expectation", p)
	}
	if g.Type != w.Type {
		return nil, nil, fmt.Errorf("volatile path %s: type %s, want %s", p, g.Type, w.Type)
	}
	return setNull(got, parts), setNull(want, parts), nil
}

func setNull(d bsoncore.Document, parts []string) bsoncore.Document {
	elems, _ := d.Elements()
	b := bsoncore.NewDocumentBuilder()
	for _, e := range elems {
		v := e.Value()
		if e.Key() == parts[0] {
			if len(parts) == 1 {
				v = bsoncore.Value{Type: bsoncore.TypeNull}
			} else if sub, ok := v.DocumentOK(); ok {
				v = bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: setNull(sub, parts[1:])}
			}
		}
		b.AppendValue(e.Key(), v)
	}
	return b.Build()
}

// Run runs every case as a subtest through the shared corpus runner
// (testcorpus.Corpus.Run): xfail cases must keep failing, and with rewrite
// the expectations are replaced by the outcomes (review the diff!), except
// where _id is generated or values are volatile.
func Run(t *testing.T, cases []Case, run Runner, rewrite bool) {
	t.Helper()
	corpus.Run(t, cases, run, rewrite)
}
