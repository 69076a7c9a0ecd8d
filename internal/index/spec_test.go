package index_test

import (
	"bytes"
	"errors"
	"sync"
	"testing"

	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/wire"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func mustSpec(t testing.TB, json string) *index.Spec {
	t.Helper()
	d, err := parseJSONDoc(json)
	if err != nil {
		t.Fatal(err)
	}
	s, err := index.ParseSpec(d)
	if err != nil {
		t.Fatalf("ParseSpec(%s): %v", json, err)
	}
	return s
}

func mustDoc(t testing.TB, json string) bsoncore.Document {
	t.Helper()
	d, err := parseJSONDoc(json)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestSpecFields(t *testing.T) {
	s := mustSpec(t, `{"key": {"a": 1, "b.c": -2, "d": "hashed"}, "name": "x", "unique": 0, "sparse": 1, "hidden": true}`)
	if s.Name != "x" || s.Unique || !s.Sparse || !s.Hidden || s.ExpireAfterSeconds != nil || s.Version != 2 {
		t.Errorf("options: %+v", s)
	}
	want := []index.Field{
		{Path: "a", Parts: []string{"a"}, Kind: index.Ascending},
		{Path: "b.c", Parts: []string{"b", "c"}, Kind: index.Descending},
		{Path: "d", Parts: []string{"d"}, Kind: index.Hashed},
	}
	if len(s.KeyPattern) != len(want) {
		t.Fatalf("KeyPattern = %+v", s.KeyPattern)
	}
	for i, f := range s.KeyPattern {
		if f.Path != want[i].Path || f.Kind != want[i].Kind || len(f.Parts) != len(want[i].Parts) {
			t.Errorf("field %d = %+v, want %+v", i, f, want[i])
		}
	}
	if !s.IsHashed() || s.IsWildcard() || s.IsID() || s.KeyParts() != 3 {
		t.Errorf("kind predicates wrong for %s", s.Key)
	}

	ttl := mustSpec(t, `{"key": {"t": 1}, "name": "t", "expireAfterSeconds": 3600.9}`)
	if ttl.ExpireAfterSeconds == nil || *ttl.ExpireAfterSeconds != 3600 {
		t.Errorf("ExpireAfterSeconds = %v, want 3600", ttl.ExpireAfterSeconds)
	}

	id := mustSpec(t, `{"key": {"_id": 1}, "name": "whatever"}`)
	if !id.IsID() || !id.Unique || id.Name != "_id_" {
		t.Errorf("_id index: IsID %v Unique %v Name %q", id.IsID(), id.Unique, id.Name)
	}

	w := mustSpec(t, `{"key": {"a.$**": 1}, "name": "w"}`)
	if !w.IsWildcard() || w.KeyParts() != 2 || w.KeyPattern[0].Kind != index.Wildcard || len(w.KeyPattern[0].Parts) != 1 {
		t.Errorf("wildcard: %+v", w.KeyPattern)
	}
	if got := index.Kind(9).String(); got != "Kind(9)" {
		t.Errorf("Kind(9).String() = %q", got)
	}
}

func TestDecodeKey(t *testing.T) {
	s := mustSpec(t, `{"key": {"a": 1, "b": -1}, "name": "ab"}`)
	keys, _, err := s.Keys(mustDoc(t, `{"a": "x", "b": {"c": [1, 2.5]}}`), nil)
	if err != nil || len(keys) != 1 {
		t.Fatalf("Keys: %v, %d keys", err, len(keys))
	}
	id := bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 42)}
	stored := keystring.Append(bytes.Clone(keys[0]), id) // as the engine stores it
	vals, rest, err := s.DecodeKey(stored)
	if err != nil {
		t.Fatal(err)
	}
	if len(vals) != 2 || vals[0].StringValue() != "x" || relaxed(vals[1]) != `{"c":[1,2.5]}` {
		t.Errorf("DecodeKey = %v", vals)
	}
	if v, n, err := keystring.Decode(rest); err != nil || n != len(rest) || v.Int32() != 42 {
		t.Errorf("rest = %x", rest)
	}

	// A part in the wrong direction, or missing, is corrupt.
	asc := keystring.Append(keystring.Append(nil, vals[0]), vals[1])
	if _, _, err := s.DecodeKey(asc); !errors.Is(err, index.ErrCorruptKey) {
		t.Errorf("ascending second part: err = %v", err)
	}
	if _, _, err := s.DecodeKey(keys[0][:3]); !errors.Is(err, index.ErrCorruptKey) {
		t.Errorf("truncated key: err = %v", err)
	}
	if _, _, err := s.DecodeKey(nil); !errors.Is(err, index.ErrCorruptKey) {
		t.Errorf("empty key: err = %v", err)
	}
}

func TestMultikey(t *testing.T) {
	s := mustSpec(t, `{"key": {"a.b.c": 1, "d": 1}, "name": "m"}`)
	_, m1, err := s.Keys(mustDoc(t, `{"a": [{"b": {"c": [1, 2]}}], "d": 1}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, m2, err := s.Keys(mustDoc(t, `{"a": {"b": [{"c": 1}]}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, m3, err := s.Keys(mustDoc(t, `{"d": [1]}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var all index.Multikey
	if all.IsMultikey() {
		t.Error("zero Multikey is multikey")
	}
	all.Add(m1)
	all.Add(m2)
	all.Add(m3)
	all.Add(m1)
	got := s.PathNames(all)
	if len(got) != 2 || len(got[0]) != 3 || got[0][0] != "a" || got[0][1] != "a.b" || got[0][2] != "a.b.c" || len(got[1]) != 1 || got[1][0] != "d" {
		t.Errorf("PathNames = %q", got)
	}
	if !all.IsMultikey() {
		t.Error("merged Multikey is not multikey")
	}
	var w index.Multikey
	w.Add(index.Multikey{Paths: []string{"b", "a"}})
	w.Add(index.Multikey{Paths: []string{"a", "c"}})
	if len(w.Paths) != 3 || w.Paths[0] != "a" || w.Paths[2] != "c" {
		t.Errorf("wildcard paths = %q", w.Paths)
	}
}

// TestKeysReuseAllocs checks that passing the previous result back makes
// key generation allocation-free for the common index shapes, except for
// the Multikey result of a document with arrays (two allocations).
func TestKeysReuseAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops items: allocations are not counted under -race")
	}
	for _, tc := range []struct {
		spec, doc string
		max       float64
	}{
		{`{"key": {"a": 1, "b": -1, "c.d": 1}, "name": "x"}`, `{"a": 1, "b": "two", "c": {"d": 3.5}}`, 0},
		{`{"key": {"tags": 1}, "name": "x"}`, `{"tags": ["a", "b", "c", "d"]}`, 2},
		{`{"key": {"_id.env": "hashed"}, "name": "x"}`, `{"_id": {"t": 1, "env": "prod"}}`, 0},
	} {
		s := mustSpec(t, tc.spec)
		doc := mustDoc(t, tc.doc)
		keys, _, err := s.Keys(doc, nil)
		if err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(100, func() {
			keys, _, _ = s.Keys(doc, keys)
		})
		if allocs > tc.max {
			t.Errorf("%s: %.1f allocations per Keys with a reused buffer", tc.spec, allocs)
		}
	}
}

// TestKeysConcurrent runs one Spec from several goroutines: a Spec is
// immutable and its scratch state pooled (run with -race to check).
func TestKeysConcurrent(t *testing.T) {
	s := mustSpec(t, `{"key": {"a.b": 1, "c": -1}, "name": "x", "partialFilterExpression": {"c": {"$exists": true}}}`)
	doc := mustDoc(t, `{"a": [{"b": 1}, {"b": 2}, {"b": [3, 4]}], "c": "z"}`)
	want, _, err := s.Keys(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf [][]byte
			for range 200 {
				got, _, err := s.Keys(doc, buf)
				if err != nil || len(got) != len(want) {
					t.Errorf("concurrent Keys: %v, %d keys", err, len(got))
					return
				}
				for i := range got {
					if !bytes.Equal(got[i], want[i]) {
						t.Errorf("concurrent Keys: key %d differs", i)
						return
					}
				}
				buf = got
			}
		}()
	}
	wg.Wait()
}

// FuzzKeys feeds arbitrary bytes as documents to a few specs: key
// generation must never panic, and whatever it returns must meet the
// invariants of checkKeys. The seeds run as an ordinary test.
func FuzzKeys(f *testing.F) {
	for _, d := range []string{
		`{"a": [1, {"b": [2, [3]]}], "c": {"0": [[]]}}`,
		`{"_id": {"env": "x"}, "a": {"b": {"c": []}}}`,
		`{"a": [{"0": 1}], "b": null}`,
	} {
		doc, err := parseJSONDoc(d)
		if err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(doc))
	}
	specs := []*index.Spec{
		mustSpec(f, `{"key": {"a.b": 1, "c.0": -1}, "name": "x"}`),
		mustSpec(f, `{"key": {"a.0.b": 1}, "name": "x", "sparse": true}`),
		mustSpec(f, `{"key": {"_id.env": "hashed", "a": 1}, "name": "x"}`),
		mustSpec(f, `{"key": {"$**": -1}, "name": "x"}`),
		mustSpec(f, `{"key": {"a.$**": 1}, "name": "x"}`),
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		doc := bsoncore.Document(b)
		if doc.Validate() != nil || wire.CheckDocument(doc) != nil {
			return // the engine only indexes documents the wire accepted
		}
		for _, s := range specs {
			keys, _, err := s.Keys(doc, nil)
			if err != nil {
				continue
			}
			if err := checkKeys(s, doc, keys); err != nil {
				t.Fatalf("%s on %s: %v", s.Key, doc, err)
			}
		}
	})
}

// TestSpecDoesNotAliasInput checks that a Spec survives its input buffer
// being reused, as a pooled request buffer is.
func TestSpecDoesNotAliasInput(t *testing.T) {
	buf, err := parseJSONDoc(`{"key": {"a": 1}, "name": "a_1", "partialFilterExpression": {"b": 1}}`)
	if err != nil {
		t.Fatal(err)
	}
	s, err := index.ParseSpec(buf)
	if err != nil {
		t.Fatal(err)
	}
	want := string(s.Doc())
	for i := range buf {
		buf[i] = 0xee
	}
	if string(s.Doc()) != want || s.Key.Lookup("a").Type != bsoncore.TypeInt32 {
		t.Error("the Spec changed with its input buffer")
	}
	keys, _, err := s.Keys(mustDoc(t, `{"a": 5, "b": 1}`), nil)
	if err != nil || len(keys) != 1 {
		t.Errorf("Keys after the input changed: %v, %d keys", err, len(keys))
	}
}
