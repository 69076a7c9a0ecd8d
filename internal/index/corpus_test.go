package index_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/testcorpus"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expectations of testdata/*.txt from the outcomes (review the diff)")

// The corpus format: the stanzas of internal/testcorpus (blank-line
// separated "key: value" lines, indented continuation lines, "#"
// comments), each a case. Keys:
//
//	case        the case's name (required, first)
//	key         the key pattern; the spec is {key, name: DefaultName(key)}
//	            plus the fields of options
//	options     more fields of the specification (extended JSON document)
//	spec        the whole specification instead of key and options
//	doc         a document to generate keys for (extended JSON)
//	keys        expected keys, one per line, each a JSON array of the
//	            decoded parts ([] for no keys)
//	multikey    expected multikey paths: {"a.b": ["a"], ...} per field, or
//	            a JSON array of paths for a wildcard index
//	error       expected MongoDB error code (of ParseSpec, or of Keys)
//	canonical   expected listIndexes form of the spec
//	defaultname expected DefaultName of the key pattern
//	xfail       a known gap: why the case is expected to fail
//
// Expectations (keys, multikey, error, canonical, defaultname) regenerate
// with -rewrite.
type corpusCase struct {
	file, name string
	line       int // 1-based line of "case:"
	entries    []testcorpus.Entry
}

var expectationKeys = []string{"error", "defaultname", "canonical", "keys", "multikey"}

func (c *corpusCase) get(k string) (string, bool) {
	for _, e := range c.entries {
		if e.Key == k {
			return e.Value, true
		}
	}
	return "", false
}

func (c *corpusCase) id() string {
	return fmt.Sprintf("%s:%d %s", filepath.Base(c.file), c.line, c.name)
}

func loadCorpus(t *testing.T) []*corpusCase {
	t.Helper()
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	var cases []*corpusCase
	for _, f := range files {
		err := testcorpus.ReadStanzas(f, func(stanza []testcorpus.Entry) error {
			if stanza[0].Key != "case" {
				return fmt.Errorf("%s:%d: a stanza must start with \"case\"", f, stanza[0].Line+1)
			}
			cases = append(cases, &corpusCase{file: f, line: stanza[0].Line + 1, name: stanza[0].Value, entries: stanza})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return cases
}

// outcome is what running a case produced, rendered as expectation lines.
type outcome map[string]string

func runCase(c *corpusCase) (outcome, error) {
	out := outcome{}
	var spec bsoncore.Document
	if s, ok := c.get("spec"); ok {
		d, err := parseJSONDoc(s)
		if err != nil {
			return nil, fmt.Errorf("spec: %v", err)
		}
		spec = d
	} else if k, ok := c.get("key"); ok {
		key, err := parseJSONDoc(k)
		if err != nil {
			return nil, fmt.Errorf("key: %v", err)
		}
		b := bsoncore.NewDocumentBuilder().AppendDocument("key", key).AppendString("name", index.DefaultName(key))
		if o, ok := c.get("options"); ok {
			opts, err := parseJSONDoc(o)
			if err != nil {
				return nil, fmt.Errorf("options: %v", err)
			}
			elems, _ := opts.Elements()
			for _, e := range elems {
				b.AppendValue(e.Key(), e.Value())
			}
		}
		spec = b.Build()
	} else {
		return nil, fmt.Errorf("a case needs spec or key")
	}
	if _, ok := c.get("defaultname"); ok {
		key, _ := spec.Lookup("key").DocumentOK()
		out["defaultname"] = index.DefaultName(key)
	}
	s, err := index.ParseSpec(spec)
	if err != nil {
		out["error"] = fmt.Sprint(codeOf(err))
		return out, nil
	}
	if _, ok := c.get("canonical"); ok {
		out["canonical"] = relaxed(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: s.Doc()})
	}
	ds, ok := c.get("doc")
	if !ok {
		return out, nil
	}
	doc, err := parseJSONDoc(ds)
	if err != nil {
		return nil, fmt.Errorf("doc: %v", err)
	}
	keys, mk, err := s.Keys(doc, nil)
	if err != nil {
		out["error"] = fmt.Sprint(codeOf(err))
		return out, nil
	}
	if err := checkKeys(s, doc, keys); err != nil {
		return nil, err
	}
	var lines []string
	for _, k := range keys {
		vals, _, _ := s.DecodeKey(k)
		var parts []string
		for _, v := range vals {
			parts = append(parts, relaxed(v))
		}
		lines = append(lines, "["+strings.Join(parts, ", ")+"]")
	}
	if len(lines) == 0 {
		out["keys"] = "[]"
	} else {
		out["keys"] = strings.Join(lines, "\n")
	}
	out["multikey"] = renderMultikey(s, mk)
	return out, nil
}

// checkKeys checks the invariants every outcome must meet, whatever the
// expectation: keys sorted and distinct (Dedup), each decoding into exactly
// KeyParts values that re-encode to the same bytes, and Applies agreeing
// with the presence of keys.
func checkKeys(s *index.Spec, doc bsoncore.Document, keys [][]byte) error {
	for i, k := range keys {
		if i > 0 && bytes.Compare(keys[i-1], k) >= 0 {
			return fmt.Errorf("keys not sorted and distinct at %d", i)
		}
		vals, rest, err := s.DecodeKey(k)
		if err != nil {
			return fmt.Errorf("key %x: %v", k, err)
		}
		if len(rest) != 0 {
			return fmt.Errorf("key %x: %d bytes left after decoding", k, len(rest))
		}
		var re []byte
		for j, v := range vals {
			if k[len(re)] >= 0x80 {
				re = keystring.AppendDesc(re, v)
			} else {
				re = keystring.Append(re, v)
			}
			_ = j
		}
		if !bytes.Equal(re, k) {
			return fmt.Errorf("key %x re-encodes as %x", k, re)
		}
	}
	// A wildcard index has no keys for a document without fields under its
	// root, whatever Applies says.
	if got := s.Applies(doc); got != (len(keys) > 0) && !(s.IsWildcard() && got) {
		return fmt.Errorf("Applies = %v with %d keys", got, len(keys))
	}
	return nil
}

func renderMultikey(s *index.Spec, mk index.Multikey) string {
	if s.IsWildcard() {
		paths := mk.Paths
		if paths == nil {
			paths = []string{}
		}
		b, _ := json.Marshal(paths)
		return string(b)
	}
	names := s.PathNames(mk)
	var parts []string
	for i, f := range s.KeyPattern {
		b, _ := json.Marshal(names[i])
		k, _ := json.Marshal(f.Path)
		parts = append(parts, string(k)+": "+string(b))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func codeOf(err error) int32 {
	if e, ok := mongoerr.As(err); ok {
		return int32(e.Code)
	}
	return -1
}

// parseJSONDoc reads an extended JSON document (the other tests of the
// package use it too).
func parseJSONDoc(s string) (bsoncore.Document, error) { return testcorpus.ParseDoc(s) }

// relaxed renders a value as relaxed extended JSON.
func relaxed(v bsoncore.Value) string {
	d := bsoncore.NewDocumentBuilder().AppendValue("v", v).Build()
	b, err := bson.MarshalExtJSON(bson.Raw(d), false, false)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	s := string(b)
	s = strings.TrimPrefix(s, `{"v":`)
	return strings.TrimSuffix(s, "}")
}

// normalize makes an expectation comparable with an outcome: JSON values
// are compacted, so that spacing in the files does not matter.
func normalize(key, v string) string {
	switch key {
	case "keys":
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(v), "\n") {
			lines = append(lines, compactJSON(l))
		}
		return strings.Join(lines, "\n")
	case "canonical", "multikey":
		return compactJSON(v)
	}
	return strings.TrimSpace(v)
}

func compactJSON(s string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(strings.TrimSpace(s))); err != nil {
		return strings.TrimSpace(s)
	}
	return b.String()
}

// TestCorpus runs testdata/*.txt. With -rewrite, a failing case's
// expectations are replaced by its outcomes, after its other keys.
func TestCorpus(t *testing.T) {
	cases := loadCorpus(t)
	if len(cases) < 80 {
		t.Errorf("the corpus has %d cases; at least 80 are wanted", len(cases))
	}
	var reps []testcorpus.Replacement
	for _, c := range cases {
		t.Run(c.id(), func(t *testing.T) {
			out, err := runCase(c)
			if err != nil {
				t.Fatalf("%s: %v", c.id(), err)
			}
			xfail, isXFail := c.get("xfail")
			var diffs []string
			for _, k := range expectationKeys {
				want, hasWant := c.get(k)
				got, hasGot := out[k]
				if k == "multikey" && !hasWant && out["error"] == "" {
					hasWant = true // always checked when keys are
				}
				if !hasWant && !hasGot {
					continue
				}
				if normalize(k, want) != normalize(k, got) {
					diffs = append(diffs, fmt.Sprintf("%s:\n  got:  %s\n  want: %s", k, strings.ReplaceAll(got, "\n", "\n        "), strings.ReplaceAll(want, "\n", "\n        ")))
				}
			}
			switch {
			case isXFail && len(diffs) == 0:
				t.Errorf("%s: expected to fail (%s) but passes: remove xfail", c.id(), xfail)
			case isXFail:
				t.Logf("%s: known gap (%s)", c.id(), xfail)
			case len(diffs) > 0 && *rewrite:
				reps = append(reps, rewriteCase(c, out)...)
			case len(diffs) > 0:
				t.Errorf("%s\n%s", c.id(), strings.Join(diffs, "\n"))
			}
		})
	}
	if err := testcorpus.ReplaceLines(reps); err != nil {
		t.Fatal(err)
	}
}

// rewriteCase removes a case's expectations and writes its outcome's at
// the end of its stanza, in expectationKeys order.
func rewriteCase(c *corpusCase, o outcome) []testcorpus.Replacement {
	var reps []testcorpus.Replacement
	for _, e := range c.entries {
		if slices.Contains(expectationKeys, e.Key) {
			reps = append(reps, testcorpus.Replacement{File: c.file, Start: e.Line, End: e.End})
		}
	}
	var lines []string
	for _, k := range expectationKeys {
		v, ok := o[k]
		if !ok {
			continue
		}
		vl := strings.Split(v, "\n")
		if len(vl) > 1 {
			lines = append(lines, k+":")
			for _, l := range vl {
				lines = append(lines, "  "+l)
			}
			continue
		}
		lines = append(lines, k+": "+vl[0])
	}
	end := c.entries[len(c.entries)-1].End
	return append(reps, testcorpus.Replacement{File: c.file, Start: end, End: end, Lines: lines})
}
