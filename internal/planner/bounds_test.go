package planner

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/query"
	"github.com/cairndb/cairn/internal/testcorpus"
)

// TestBounds reads testdata/bounds.txt: stanzas (internal/testcorpus) of
//
//	key: <key pattern, extended JSON>
//	multikey: true                      (optional: every path held arrays)
//	multiKeyPaths: <explain's form>     (optional: which paths held arrays)
//	filter: <filter>
//	bounds: <expected indexBounds, extended JSON; "none" when the index is not useful>
//
// and checks the bounds the planner computes and prints, as a golden
// plan-string test.
func TestBounds(t *testing.T) {
	line := 0
	var key, filter, want, mkPaths string
	multikey := false
	check := func() {
		if key == "" {
			return
		}
		var k, flt bson.D
		if err := bson.UnmarshalExtJSON([]byte(key), false, &k); err != nil {
			t.Fatalf("line %d: key: %v", line, err)
		}
		if err := bson.UnmarshalExtJSON([]byte(filter), false, &flt); err != nil {
			t.Fatalf("line %d: filter: %v", line, err)
		}
		specRaw, _ := bson.Marshal(bson.D{{Key: "key", Value: k}, {Key: "name", Value: "ix"}})
		spec, err := index.ParseSpec(specRaw)
		if err != nil {
			t.Fatalf("line %d: %v", line, err)
		}
		raw, _ := bson.Marshal(flt)
		ix := &indexRef{name: "ix", spec: spec, multikey: multikey}
		if mkPaths != "" {
			ix.multikey, ix.mkKnown, ix.mk = true, true, multikeyFromNames(t, spec, mkPaths)
		}
		f, err := query.Parse(raw)
		if err != nil {
			t.Fatalf("line %d: filter: %v", line, err)
		}
		bounds, _ := boundsFrom(analyze(f.Tree()), ix)
		got := "none"
		if !bounds[0].IsFull() {
			d, _ := bson.MarshalExtJSON(newIXScan(ix, bounds, false).boundsDoc(), false, false)
			got = string(d)
		}
		if got != want {
			t.Errorf("line %d: key %s%s filter %s:\n got  %s\n want %s", line, key, map[bool]string{true: " (multikey)"}[multikey], filter, got, want)
		}
		key, filter, want, mkPaths, multikey = "", "", "", "", false
	}
	err := testcorpus.ReadStanzas("testdata/bounds.txt", func(stanza []testcorpus.Entry) error {
		line = stanza[0].Line + 1
		for _, e := range stanza {
			var err error
			switch e.Key {
			case "key":
				key = e.Value
			case "multikey":
				multikey, err = strconv.ParseBool(e.Value)
			case "multiKeyPaths":
				mkPaths = e.Value
			case "filter":
				filter = e.Value
			case "bounds":
				want = e.Value
			default:
				err = fmt.Errorf("unknown key")
			}
			if err != nil {
				return fmt.Errorf("line %d: %s: %v", e.Line+1, e.Key, err)
			}
		}
		check()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestImplies checks the partial-index implication rule.
func TestImplies(t *testing.T) {
	cases := []struct {
		filter, pfe string
		want        bool
	}{
		{`{"a": 5}`, `{"a": {"$gt": 1}}`, true},
		{`{"a": 1}`, `{"a": {"$gt": 1}}`, false},
		{`{"a": {"$gte": 2}}`, `{"a": {"$gt": 1}}`, true},
		{`{"a": {"$gte": 1}}`, `{"a": {"$gt": 1}}`, false},
		{`{"a": {"$in": [2, 3]}}`, `{"a": {"$gte": 2}}`, true},
		{`{"a": {"$in": [2, null]}}`, `{"a": {"$exists": true}}`, false},
		{`{"a": "x"}`, `{"a": {"$exists": true}}`, true},
		{`{"a": null}`, `{"a": {"$exists": true}}`, false},
		{`{"a": 3, "b": 4}`, `{"a": {"$gt": 1}, "b": {"$exists": true}}`, true},
		{`{"a": 3}`, `{"a": {"$gt": 1}, "b": {"$exists": true}}`, false},
		{`{"a": "5"}`, `{"a": {"$gt": 1}}`, false},
		{`{"$or": [{"a": 5}, {"a": 6}]}`, `{"a": {"$gt": 1}}`, false},
		{`{"a": 5}`, `{"$or": [{"a": 5}, {"b": 1}]}`, false},
		{`{"a": 5}`, `{"a": 5}`, true},
		{`{"a": {"$gt": 5}}`, `{"a": {"$type": "number"}}`, false},
		// A numeric path bounds nothing, so it implies nothing and is
		// implied by nothing, even by the same condition.
		{`{"b": 1}`, `{"a.0": {"$gt": 5}}`, false},
		{`{"a.0": 6}`, `{"a.0": {"$gt": 5}}`, false},
		{`{"b": 1}`, `{"$and": [{"a.0": {"$gt": 5}}]}`, false},
	}
	for _, c := range cases {
		var f, p bson.D
		if err := bson.UnmarshalExtJSON([]byte(c.filter), false, &f); err != nil {
			t.Fatal(err)
		}
		if err := bson.UnmarshalExtJSON([]byte(c.pfe), false, &p); err != nil {
			t.Fatal(err)
		}
		fr, _ := bson.Marshal(f)
		pr, _ := bson.Marshal(p)
		ff, err := query.Parse(fr)
		if err != nil {
			t.Fatal(err)
		}
		pf, err := query.Parse(pr)
		if err != nil {
			t.Fatal(err)
		}
		if got := implies(analyze(ff.Tree()), pf.Tree()); got != c.want {
			t.Errorf("%s implies %s: %v, want %v", c.filter, c.pfe, got, c.want)
		}
	}
}

// multikeyFromNames reads explain's multiKeyPaths form ({"a.b": ["a"]})
// back into per-field components.
func multikeyFromNames(t *testing.T, spec *index.Spec, names string) index.Multikey {
	t.Helper()
	var m map[string][]string
	if err := bson.UnmarshalExtJSON([]byte(names), false, &m); err != nil {
		t.Fatalf("multiKeyPaths %s: %v", names, err)
	}
	mk := index.Multikey{Components: make([][]int, len(spec.KeyPattern))}
	for i, f := range spec.KeyPattern {
		for _, p := range m[f.Path] {
			mk.Components[i] = append(mk.Components[i], strings.Count(p, "."))
		}
	}
	if got := spec.PathNames(mk); len(got) != len(spec.KeyPattern) {
		t.Fatalf("multiKeyPaths %s: %v", names, got)
	}
	return mk
}
