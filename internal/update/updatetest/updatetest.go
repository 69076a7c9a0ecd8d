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
	"bytes"
	"fmt"
	"github.com/cairndb/cairn/internal/testcorpus"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Case is one update statement applied to one stored document.
type Case struct {
	File string // path of the testdata file
	Line int    // line of the "case:" key
	Name string

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
	WantError    int32             // 0 unless "error" is given
	GeneratedID  bool
	Volatile     []string
	XFail        string

	// expStart and expEnd are the lines (0-based, end exclusive) holding
	// the expectation, for rewriting.
	expStart, expEnd int
}

// ID is the case's file:line and name, for test names and messages.
func (c *Case) ID() string { return fmt.Sprintf("%s:%d %s", filepath.Base(c.File), c.Line, c.Name) }

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
func Load(dir string) ([]Case, error) { return testcorpus.Load(dir, LoadFile) }

type entry struct {
	key   string
	value string
	line  int // 0-based line of the key
	end   int // 0-based line after the value
}

// LoadFile reads one testdata file.
func LoadFile(file string) ([]Case, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(data), "\n")
	var (
		cases  []Case
		doc    bsoncore.Document
		stanza []entry
	)
	flush := func() error {
		if len(stanza) == 0 {
			return nil
		}
		defer func() { stanza = nil }()
		if stanza[0].key != "case" {
			for _, e := range stanza {
				if e.key != "doc" {
					return fmt.Errorf("%s:%d: %q outside a case (a stanza without \"case\" may only set doc)", file, e.line+1, e.key)
				}
				d, err := parseDocOrNone(e.value)
				if err != nil {
					return fmt.Errorf("%s:%d: %v", file, e.line+1, err)
				}
				doc = d
			}
			return nil
		}
		c, err := buildCase(file, stanza, doc)
		if err != nil {
			return err
		}
		cases = append(cases, c)
		return nil
	}
	for i := 0; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], " \t\r")
		switch {
		case strings.HasPrefix(l, "#"):
			continue
		case l == "":
			if err := flush(); err != nil {
				return nil, err
			}
			continue
		case l[0] == ' ' || l[0] == '\t':
			if len(stanza) == 0 {
				return nil, fmt.Errorf("%s:%d: continuation line without a key", file, i+1)
			}
			stanza[len(stanza)-1].value += "\n" + strings.TrimSpace(l)
			stanza[len(stanza)-1].end = i + 1
			continue
		}
		key, val, ok := strings.Cut(l, ":")
		if !ok {
			return nil, fmt.Errorf("%s:%d: expected \"key: value\"", file, i+1)
		}
		stanza = append(stanza, entry{key: key, value: strings.TrimSpace(val), line: i, end: i + 1})
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return cases, nil
}

func buildCase(file string, stanza []entry, doc bsoncore.Document) (Case, error) {
	c := Case{File: file, Line: stanza[0].line + 1, Name: stanza[0].value, Doc: doc, Filter: emptyDoc(), expStart: -1}
	for _, e := range stanza[1:] {
		errf := func(err error) error { return fmt.Errorf("%s:%d: %s: %v", file, e.line+1, e.key, err) }
		var err error
		switch e.key {
		case "doc":
			c.Doc, err = parseDocOrNone(e.value)
		case "filter":
			c.Filter, err = ParseDoc(e.value)
		case "update":
			c.Update, err = parseValue(e.value)
		case "arrayFilters":
			var vals []bsoncore.Value
			vals, err = parseValues(e.value)
			for _, v := range vals {
				d, ok := v.DocumentOK()
				if !ok {
					err = fmt.Errorf("arrayFilters must hold documents")
					break
				}
				c.ArrayFilters = append(c.ArrayFilters, d)
			}
		case "let":
			c.Let, err = ParseDoc(e.value)
		case "c":
			c.Constants, err = ParseDoc(e.value)
		case "upsert":
			c.Upsert, err = strconv.ParseBool(e.value)
		case "multi":
			c.Multi, err = strconv.ParseBool(e.value)
		case "result":
			c.WantDoc, err = ParseDoc(e.value)
		case "modified":
			var b bool
			b, err = strconv.ParseBool(e.value)
			c.WantModified = &b
		case "error":
			var n int64
			n, err = strconv.ParseInt(e.value, 10, 32)
			c.WantError = int32(n)
		case "generatedId":
			c.GeneratedID, err = strconv.ParseBool(e.value)
		case "volatile":
			for _, p := range strings.Split(e.value, ",") {
				c.Volatile = append(c.Volatile, strings.TrimSpace(p))
			}
		case "xfail":
			c.XFail = e.value
		default:
			err = fmt.Errorf("unknown key")
		}
		if err != nil {
			return c, errf(err)
		}
		switch e.key {
		case "result", "error":
			if c.expStart >= 0 {
				return c, errf(fmt.Errorf("a case has exactly one of result, error"))
			}
			c.expStart, c.expEnd = e.line, e.end
		}
	}
	if c.Update.Type == 0 {
		return c, fmt.Errorf("%s:%d: case %q has no update", file, c.Line, c.Name)
	}
	if c.expStart < 0 {
		return c, fmt.Errorf("%s:%d: case %q has no expectation (result or error)", file, c.Line, c.Name)
	}
	return c, nil
}

func emptyDoc() bsoncore.Document { return bsoncore.Document{5, 0, 0, 0, 0} }

// ParseDoc reads one extended JSON document.
func ParseDoc(s string) (bsoncore.Document, error) {
	var raw bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(s), false, &raw); err != nil {
		return nil, err
	}
	return bsoncore.Document(raw), nil
}

func parseDocOrNone(s string) (bsoncore.Document, error) {
	if s == "none" {
		return nil, nil
	}
	return ParseDoc(s)
}

func parseValue(s string) (bsoncore.Value, error) {
	d, err := ParseDoc(`{"v": ` + s + `}`)
	if err != nil {
		return bsoncore.Value{}, err
	}
	return d.Lookup("v"), nil
}

func parseValues(s string) ([]bsoncore.Value, error) {
	v, err := parseValue(s)
	if err != nil {
		return nil, err
	}
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, fmt.Errorf("want a JSON array")
	}
	return arr.Values()
}

// canonical is a value's canonical extended JSON: equal strings mean equal
// types, values and field order.
func canonical(v bsoncore.Value) string {
	d := bsoncore.NewDocumentBuilder().AppendValue("v", v).Build()
	b, err := bson.MarshalExtJSON(bson.Raw(d), true, false)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}

func canonicalDoc(d bsoncore.Document) string {
	if d == nil {
		return "<none>"
	}
	return canonical(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d})
}

// Check compares an outcome with the case's expectation.
func (c *Case) Check(o Outcome) error {
	if c.WantError != 0 {
		if o.Code != c.WantError {
			return fmt.Errorf("want error code %d, got code %d (document %s)", c.WantError, o.Code, canonicalDoc(o.Doc))
		}
		return nil
	}
	if o.Code != 0 {
		return fmt.Errorf("want success, got error code %d", o.Code)
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

// Rewrite replaces each case's expectation in its file by its outcome.
// Cases marked xfail, or with generatedId or volatile values, keep theirs.
func Rewrite(cases []Case, outcomes []Outcome) error {
	byFile := map[string][]int{}
	for i := range cases {
		byFile[cases[i].File] = append(byFile[cases[i].File], i)
	}
	for file, idx := range byFile {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		lines := strings.Split(string(data), "\n")
		slices.SortFunc(idx, func(a, b int) int { return cases[b].expStart - cases[a].expStart })
		for _, i := range idx {
			c, o := &cases[i], outcomes[i]
			if c.XFail != "" || c.GeneratedID || len(c.Volatile) > 0 {
				continue
			}
			exp := fmt.Sprintf("error: %d", o.Code)
			if o.Code == 0 {
				exp = "result: " + Relaxed(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: o.Doc})
			}
			lines = slices.Replace(lines, c.expStart, c.expEnd, exp)
		}
		if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			return err
		}
	}
	return nil
}

var (
	numberInt    = regexp.MustCompile(`\{"\$numberInt":"(-?\d+)"\}`)
	numberDouble = regexp.MustCompile(`\{"\$numberDouble":"(-?\d+\.\d+(?:E[-+]?\d+)?)"\}`)
)

// Relaxed prints a value as compact extended JSON that parses back to the
// same types: int32 and finite doubles with a fraction plainly, everything
// else canonical.
func Relaxed(v bsoncore.Value) string {
	s := canonical(v)
	s = strings.TrimSuffix(strings.TrimPrefix(s, `{"v":`), "}")
	s = numberInt.ReplaceAllString(s, "$1")
	s = numberDouble.ReplaceAllString(s, "$1")
	var b bytes.Buffer
	inStr := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		b.WriteByte(ch)
		switch {
		case ch == '"' && (i == 0 || s[i-1] != '\\'):
			inStr = !inStr
		case !inStr && (ch == ',' || ch == ':'):
			b.WriteByte(' ')
		}
	}
	return b.String()
}
