package index_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expectations of testdata/*.txt from the outcomes (review the diff)")

// The corpus format. A file is a sequence of stanzas separated by blank
// lines; a stanza is "key: value" lines, a line starting with whitespace
// continuing the previous value; "#" lines are comments. Keys:
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
	line       int
	entries    []entry
	stanzaEnd  int
}

type entry struct {
	key, value string
	lines      []string // the raw lines, for rewriting
}

var expectationKeys = []string{"error", "defaultname", "canonical", "keys", "multikey"}

func (c *corpusCase) get(k string) (string, bool) {
	for _, e := range c.entries {
		if e.key == k {
			return e.value, true
		}
	}
	return "", false
}

func (c *corpusCase) id() string {
	return fmt.Sprintf("%s:%d %s", filepath.Base(c.file), c.line, c.name)
}

func loadCorpus(t *testing.T) (map[string][]string, []*corpusCase) {
	t.Helper()
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	raw := map[string][]string{}
	var cases []*corpusCase
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		raw[f] = lines
		var cur *corpusCase
		flush := func(end int) {
			if cur != nil {
				cur.stanzaEnd = end
				cases = append(cases, cur)
				cur = nil
			}
		}
		for i, l := range lines {
			trimmed := strings.TrimRight(l, " \t\r")
			switch {
			case trimmed == "":
				flush(i)
			case strings.HasPrefix(trimmed, "#"):
				if cur != nil {
					cur.entries = append(cur.entries, entry{key: "#", lines: []string{l}})
				}
			case trimmed[0] == ' ' || trimmed[0] == '\t':
				if cur == nil || len(cur.entries) == 0 {
					t.Fatalf("%s:%d: continuation line without a key", f, i+1)
				}
				e := &cur.entries[len(cur.entries)-1]
				e.value += "\n" + strings.TrimSpace(trimmed)
				e.lines = append(e.lines, l)
			default:
				k, v, ok := strings.Cut(trimmed, ":")
				if !ok {
					t.Fatalf("%s:%d: expected \"key: value\"", f, i+1)
				}
				if cur == nil {
					if k != "case" {
						t.Fatalf("%s:%d: a stanza must start with \"case\"", f, i+1)
					}
					cur = &corpusCase{file: f, line: i + 1, name: strings.TrimSpace(v)}
				}
				cur.entries = append(cur.entries, entry{key: k, value: strings.TrimSpace(v), lines: []string{l}})
			}
		}
		flush(len(lines))
	}
	return raw, cases
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

func parseJSONDoc(s string) (bsoncore.Document, error) {
	var raw bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(s), false, &raw); err != nil {
		return nil, err
	}
	return bsoncore.Document(raw), nil
}

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

// TestCorpus runs testdata/*.txt.
func TestCorpus(t *testing.T) {
	raw, cases := loadCorpus(t)
	if len(cases) < 80 {
		t.Errorf("the corpus has %d cases; at least 80 are wanted", len(cases))
	}
	rewrites := map[string]map[int]*corpusCase{}
	outcomes := map[*corpusCase]outcome{}
	for _, c := range cases {
		t.Run(c.id(), func(t *testing.T) {
			out, err := runCase(c)
			if err != nil {
				t.Fatalf("%s: %v", c.id(), err)
			}
			outcomes[c] = out
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
				if rewrites[c.file] == nil {
					rewrites[c.file] = map[int]*corpusCase{}
				}
				rewrites[c.file][c.line] = c
			case len(diffs) > 0:
				t.Errorf("%s\n%s", c.id(), strings.Join(diffs, "\n"))
			}
		})
	}
	for f, byLine := range rewrites {
		lines := raw[f]
		var out []string
		for i := 0; i < len(lines); i++ {
			c, ok := byLine[i+1]
			if !ok {
				out = append(out, lines[i])
				continue
			}
			for _, e := range c.entries {
				if !slices.Contains(expectationKeys, e.key) {
					out = append(out, e.lines...)
				}
			}
			o := outcomes[c]
			for _, k := range expectationKeys {
				v, ok := o[k]
				if !ok {
					continue
				}
				vl := strings.Split(v, "\n")
				if len(vl) > 1 {
					out = append(out, "keys:")
					for _, l := range vl {
						out = append(out, "  "+l)
					}
					continue
				}
				out = append(out, k+": "+vl[0])
			}
			i = c.stanzaEnd - 1
		}
		if err := os.WriteFile(f, []byte(strings.Join(out, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %s", f)
	}
}
