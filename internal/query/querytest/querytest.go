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
	"bytes"
	"encoding/json"
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
		cases   []Case
		docs    []bsoncore.Document
		stanza  []entry
		lastEnd int
	)
	flush := func(end int) error {
		if len(stanza) == 0 {
			return nil
		}
		defer func() { stanza = nil }()
		if stanza[0].key != "case" {
			for _, e := range stanza {
				if e.key != "docs" {
					return fmt.Errorf("%s:%d: %q outside a case (a stanza without \"case\" may only set docs)", file, e.line+1, e.key)
				}
				d, err := parseDocs(e.value)
				if err != nil {
					return fmt.Errorf("%s:%d: %v", file, e.line+1, err)
				}
				docs = d
			}
			return nil
		}
		c, err := buildCase(file, stanza, docs)
		if err != nil {
			return err
		}
		c.stanzaEnd = end
		cases = append(cases, c)
		return nil
	}
	for i := 0; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], " \t\r")
		switch {
		case strings.HasPrefix(l, "#"):
			continue
		case l == "":
			if err := flush(lastEnd); err != nil {
				return nil, err
			}
			continue
		case l[0] == ' ' || l[0] == '\t':
			if len(stanza) == 0 {
				return nil, fmt.Errorf("%s:%d: continuation line without a key", file, i+1)
			}
			stanza[len(stanza)-1].value += "\n" + strings.TrimSpace(l)
			stanza[len(stanza)-1].end = i + 1
			lastEnd = i + 1
			continue
		}
		key, val, ok := strings.Cut(l, ":")
		if !ok {
			return nil, fmt.Errorf("%s:%d: expected \"key: value\"", file, i+1)
		}
		stanza = append(stanza, entry{key: key, value: strings.TrimSpace(val), line: i, end: i + 1})
		lastEnd = i + 1
	}
	if err := flush(lastEnd); err != nil {
		return nil, err
	}
	return cases, nil
}

func buildCase(file string, stanza []entry, docs []bsoncore.Document) (Case, error) {
	c := Case{File: file, Line: stanza[0].line + 1, Name: stanza[0].value, Docs: docs, Filter: emptyDoc(), expStart: -1}
	for _, e := range stanza[1:] {
		errf := func(err error) error { return fmt.Errorf("%s:%d: %s: %v", file, e.line+1, e.key, err) }
		var err error
		switch e.key {
		case "docs":
			c.Docs, err = parseDocs(e.value)
		case "filter":
			c.Filter, err = parseDoc(e.value)
		case "projection":
			c.Projection, err = parseDoc(e.value)
		case "sort":
			c.Sort, err = parseDoc(e.value)
		case "skip":
			c.Skip, err = strconv.ParseInt(e.value, 10, 64)
		case "limit":
			c.Limit, err = strconv.ParseInt(e.value, 10, 64)
		case "ids":
			c.WantIDs, err = parseValues(e.value)
			if c.WantIDs == nil {
				c.WantIDs = []bsoncore.Value{}
			}
		case "result":
			c.WantDocs, err = parseDocs(e.value)
			if c.WantDocs == nil {
				c.WantDocs = []bsoncore.Document{}
			}
		case "error":
			var n int64
			n, err = strconv.ParseInt(e.value, 10, 32)
			c.WantError = int32(n)
		case "xfail":
			c.XFail = e.value
		default:
			err = fmt.Errorf("unknown key")
		}
		if err != nil {
			return c, errf(err)
		}
		switch e.key {
		case "ids", "result", "error":
			if c.expStart >= 0 {
				return c, errf(fmt.Errorf("a case has exactly one of ids, result, error"))
			}
			c.expStart, c.expEnd = e.line, e.end
		}
	}
	if c.expStart < 0 {
		return c, fmt.Errorf("%s:%d: case %q has no expectation (ids, result or error)", file, c.Line, c.Name)
	}
	return c, nil
}

func emptyDoc() bsoncore.Document { return bsoncore.Document{5, 0, 0, 0, 0} }

func parseDoc(s string) (bsoncore.Document, error) {
	var raw bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(s), false, &raw); err != nil {
		return nil, err
	}
	return bsoncore.Document(raw), nil
}

// parseDocs reads a sequence of extended JSON documents.
func parseDocs(s string) ([]bsoncore.Document, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	var out []bsoncore.Document
	for dec.More() {
		var m json.RawMessage
		if err := dec.Decode(&m); err != nil {
			return nil, err
		}
		d, err := parseDoc(string(m))
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// parseValues reads a JSON array of extended JSON values.
func parseValues(s string) ([]bsoncore.Value, error) {
	d, err := parseDoc(`{"v": ` + s + `}`)
	if err != nil {
		return nil, err
	}
	v := d.Lookup("v")
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, fmt.Errorf("want a JSON array")
	}
	return arr.Values()
}

// canonical is a value's canonical extended JSON: equal strings mean equal
// types and values.
func canonical(v bsoncore.Value) string {
	d := bsoncore.NewDocumentBuilder().AppendValue("v", v).Build()
	b, err := bson.MarshalExtJSON(bson.Raw(d), true, false)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}

func canonicalDoc(d bsoncore.Document) string {
	return canonical(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d})
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
			got = append(got, canonical(d.Lookup("_id")))
		}
		for _, v := range c.WantIDs {
			want = append(want, canonical(v))
		}
	} else {
		for _, d := range o.Docs {
			got = append(got, canonicalDoc(d))
		}
		for _, d := range c.WantDocs {
			want = append(want, canonicalDoc(d))
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
		// Replace from the bottom so earlier line numbers stay valid.
		slices.SortFunc(idx, func(a, b int) int { return cases[b].expStart - cases[a].expStart })
		for _, i := range idx {
			c := &cases[i]
			if c.XFail != "" {
				continue
			}
			exp := formatExpectation(c, outcomes[i])
			lines = slices.Replace(lines, c.expStart, c.expEnd, exp...)
		}
		if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			return err
		}
	}
	return nil
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
		out = append(out, "  "+Relaxed(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}))
	}
	return out
}

var (
	numberInt    = regexp.MustCompile(`\{"\$numberInt":"(-?\d+)"\}`)
	numberDouble = regexp.MustCompile(`\{"\$numberDouble":"(-?\d+\.\d+(?:E[-+]?\d+)?)"\}`)
)

// Relaxed prints a value as compact extended JSON that parses back to the
// same types: int32 and finite doubles plainly, everything else canonical.
func Relaxed(v bsoncore.Value) string {
	s := canonical(v)
	s = strings.TrimSuffix(strings.TrimPrefix(s, `{"v":`), "}")
	s = numberInt.ReplaceAllString(s, "$1")
	s = numberDouble.ReplaceAllString(s, "$1")
	var b bytes.Buffer
	// Add a space after commas and colons between fields for readability.
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
