package testcorpus

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "s.txt")
	if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestReadStanzas(t *testing.T) {
	f := writeFile(t, "# comment\na: 1\nb:\n  x\n    # indented: a continuation, not a comment\n\n\ncase: two \nc: {\"k\": 2}\n")
	var got [][]Entry
	err := ReadStanzas(f, func(s []Entry) error { got = append(got, s); return nil })
	if err != nil {
		t.Fatal(err)
	}
	want := [][]Entry{
		{{Key: "a", Value: "1", Line: 1, End: 2}, {Key: "b", Value: "\nx\n  # indented: a continuation, not a comment", Line: 2, End: 5}},
		{{Key: "case", Value: "two", Line: 7, End: 8}, {Key: "c", Value: `{"k": 2}`, Line: 8, End: 9}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d stanzas, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("stanza %d:\ngot  %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

func TestReadStanzasErrors(t *testing.T) {
	for _, body := range []string{"  continuation first\n", "a: 1\nno colon\n"} {
		if err := ReadStanzas(writeFile(t, body), func([]Entry) error { return nil }); err == nil {
			t.Errorf("ReadStanzas accepted %q", body)
		}
	}
}

func TestReplaceLines(t *testing.T) {
	f := writeFile(t, "l0\nl1\nl2\nl3\nl4")
	err := ReplaceLines([]Replacement{
		{File: f, Start: 1, End: 2, Lines: []string{"one", "uno"}},
		{File: f, Start: 3, End: 5, Lines: []string{"tail"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(f)
	if got, want := string(data), "l0\none\nuno\nl2\ntail"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestRelaxedRoundTrip(t *testing.T) {
	d, err := ParseDoc(`{"i": 1, "l": {"$numberLong": "1"}, "d": 1.5, "w": 1.0, "s": "x\"y, z: w", "a": [1.5, null]}`)
	if err != nil {
		t.Fatal(err)
	}
	s := RelaxedDoc(d)
	if !strings.Contains(s, `"i": 1,`) || !strings.Contains(s, `"s": "x\"y, z: w"`) {
		t.Errorf("Relaxed(%s) = %s: int32 not plain or string altered", CanonicalDoc(d), s)
	}
	back, err := ParseDoc(s)
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	if CanonicalDoc(back) != CanonicalDoc(d) {
		t.Errorf("round trip changed %s into %s", CanonicalDoc(d), CanonicalDoc(back))
	}
}

func TestParseValues(t *testing.T) {
	vs, err := ParseValues(`[1, "a", {"b": 2}]`)
	if err != nil || len(vs) != 3 {
		t.Fatalf("ParseValues = %v, %v", vs, err)
	}
	if _, err := ParseValues(`{"b": 2}`); err == nil {
		t.Errorf("ParseValues accepted a document")
	}
	docs, err := ParseDocs("{\"a\": 1}\n{\"a\": 2}")
	if err != nil || len(docs) != 2 {
		t.Fatalf("ParseDocs = %v, %v", docs, err)
	}
}
