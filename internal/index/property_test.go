package index_test

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

var (
	seedFlag  = flag.Uint64("seed", 0, "seed for the random property tests (0: time-based)")
	docsFlag  = flag.Int("docs", 3000, "random documents per property test")
	maxDepth  = 3
	fieldName = []string{"a", "b", "c", "0", "1"}
)

// newRand seeds a generator and makes a failure name the seed.
func newRand(t *testing.T) *rand.Rand {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("reproduce with: go test -run '%s' -seed %d", t.Name(), seed)
		}
	})
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// docGen makes small documents crowded with the shapes key generation
// cares about: nested documents, arrays of documents, arrays of arrays,
// empty containers, numeric field names, equal numbers of several types.
type docGen struct{ r *rand.Rand }

func (g docGen) doc(depth int) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	n := g.r.IntN(4)
	if depth == 0 {
		n++
	}
	for range n {
		b.AppendValue(fieldName[g.r.IntN(len(fieldName))], g.value(depth+1))
	}
	return b.Build()
}

func (g docGen) value(depth int) bsoncore.Value {
	k := g.r.IntN(10)
	if depth >= maxDepth && k >= 7 {
		k = g.r.IntN(7)
	}
	switch k {
	case 0:
		return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(g.r.IntN(4)))}
	case 1:
		return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, float64(g.r.IntN(4))/2)}
	case 2:
		return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, int64(g.r.IntN(4)))}
	case 3:
		return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, []string{"x", "y", ""}[g.r.IntN(3)])}
	case 4:
		return bsoncore.Value{Type: bsoncore.TypeNull}
	case 5:
		return bsoncore.Value{Type: bsoncore.TypeBoolean, Data: bsoncore.AppendBoolean(nil, g.r.IntN(2) == 0)}
	case 6:
		if g.r.IntN(8) == 0 {
			return bsoncore.Value{Type: bsoncore.TypeUndefined}
		}
		return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, -1)}
	case 7:
		return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: g.doc(depth)}
	default:
		b := bsoncore.NewArrayBuilder()
		for range g.r.IntN(4) {
			b.AppendValue(g.value(depth + 1))
		}
		return bsoncore.Value{Type: bsoncore.TypeArray, Data: b.Build()}
	}
}

// pathIn returns, two times out of three, a path that exists in doc (found
// by walking it, through arrays by position or into their documents), and
// otherwise a random one.
func (g docGen) pathIn(doc bsoncore.Document) string {
	if g.r.IntN(3) == 0 {
		return g.path()
	}
	var parts []string
	v := bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}
	for len(parts) < 4 {
		switch v.Type {
		case bsoncore.TypeEmbeddedDocument:
			elems, _ := bsoncore.Document(v.Data).Elements()
			if len(elems) == 0 {
				return g.orRandom(parts)
			}
			e := elems[g.r.IntN(len(elems))]
			parts = append(parts, e.Key())
			v = e.Value()
		case bsoncore.TypeArray:
			vals, _ := bsoncore.Array(v.Data).Values()
			if len(vals) == 0 || g.r.IntN(3) == 0 {
				parts = append(parts, fmt.Sprint(g.r.IntN(len(vals)+1)))
				if len(vals) == 0 {
					return g.orRandom(parts)
				}
				v = vals[min(g.r.IntN(len(vals)+1), len(vals)-1)]
				continue
			}
			v = vals[g.r.IntN(len(vals))]
			if v.Type != bsoncore.TypeEmbeddedDocument {
				return g.orRandom(parts)
			}
		default:
			return g.orRandom(parts)
		}
		if g.r.IntN(3) == 0 {
			break
		}
	}
	return g.orRandom(parts)
}

func (g docGen) orRandom(parts []string) string {
	if len(parts) == 0 {
		return g.path()
	}
	return strings.Join(parts, ".")
}

func (g docGen) path() string {
	parts := make([]string, 1+g.r.IntN(3))
	for i := range parts {
		parts[i] = fieldName[g.r.IntN(len(fieldName))]
	}
	return strings.Join(parts, ".")
}

// TestKeysMatchQueries is a differential check of key generation against
// the query engine: for random documents and single-field indexes, every
// key of a document must be the value of an equality the document
// satisfies — {path: {$eq: v}} for a key v, {path: {$eq: []}} for the
// undefined that stands for an empty array. An index whose keys broke this
// would make an indexed equality miss documents a collection scan finds.
//
// Expected exceptions, each counted and reported rather than skipped:
//   - an undefined key of a document that stores undefined values: it may
//     stand for the value itself, and {$eq: undefined} is not a valid
//     query (MongoDB's planner never builds bounds on undefined);
//   - the ambiguous-field error (16746), which refuses the document instead
//     of producing keys;
//   - a null key where the path went through an array and found nothing in
//     an element that is not a document, in an empty array, or at a
//     position past a scalar ({"a.b": 1} over {a: [1]} or {a: []}, {"a.0.b":
//     1} over {a: [1]}). Key generation gives null there, but in
//     MongoDB 7.0 {"a.b": null} does not match such documents
//     (jstests/core/null_query_semantics.js before 9.0; MongoDB 9.0 changed
//     the query side, SERVER-36681). MongoDB's planner therefore never
//     answers a null equality from a multikey index without fetching and
//     filtering the documents; Cairn's planner must do the same.
func TestKeysMatchQueries(t *testing.T) {
	r := newRand(t)
	g := docGen{r}
	var checked, nonNull, undefinedStored, refused, multikeyNulls int
	var buf [][]byte
	for range *docsFlag {
		doc := g.doc(0)
		path := g.pathIn(doc)
		dir := 1
		if r.IntN(2) == 0 {
			dir = -1
		}
		key := bsoncore.NewDocumentBuilder().AppendInt32(path, int32(dir)).Build()
		spec, err := index.ParseSpec(bsoncore.NewDocumentBuilder().AppendDocument("key", key).AppendString("name", "p").Build())
		if err != nil {
			t.Fatalf("ParseSpec(%s): %v", key, err)
		}
		keys, mk, err := spec.Keys(doc, buf)
		buf = keys
		if err != nil {
			if c := mongoerr.CodeOf(err); c != index.CodeAmbiguousFieldName {
				t.Fatalf("Keys(%s) on %s: unexpected error %v", key, doc, err)
			}
			refused++
			continue
		}
		for _, k := range keys {
			vals, _, err := spec.DecodeKey(k)
			if err != nil {
				t.Fatalf("DecodeKey(%x): %v", k, err)
			}
			v := vals[0]
			if v.Type == bsoncore.TypeNull && (mk.IsMultikey() || crossesArray(doc, strings.Split(path, "."))) {
				multikeyNulls++
				continue
			}
			if v.Type == bsoncore.TypeUndefined && containsUndefined(doc) {
				undefinedStored++
				continue
			}
			if v.Type == bsoncore.TypeUndefined {
				v = bsoncore.Value{Type: bsoncore.TypeArray, Data: bsoncore.NewArrayBuilder().Build()}
			}
			filter := bsoncore.NewDocumentBuilder().AppendDocument(path,
				bsoncore.NewDocumentBuilder().AppendValue("$eq", v).Build()).Build()
			f, err := query.Parse(filter)
			if err != nil {
				t.Fatalf("query.Parse(%s): %v", filter, err)
			}
			if !f.Match(doc) {
				t.Fatalf("index %s has key %s for %s, but %s does not match it", key, vals[0], doc, filter)
			}
			checked++
			if v.Type != bsoncore.TypeNull {
				nonNull++
			}
		}
	}
	t.Logf("%d keys checked (%d not null); not checked: %d undefined keys of documents holding undefined, %d refused (16746), %d null keys through arrays", checked, nonNull, undefinedStored, refused, multikeyNulls)
	if nonNull < *docsFlag/4 {
		t.Errorf("only %d keys other than null checked", nonNull)
	}
}

// crossesArray reports whether some proper prefix of the path holds an
// array in doc (following the first field of each name, as key generation
// does).
func crossesArray(doc bsoncore.Document, parts []string) bool {
	v := bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}
	for i, p := range parts {
		switch v.Type {
		case bsoncore.TypeEmbeddedDocument:
			var err error
			if v, err = bsoncore.Document(v.Data).LookupErr(p); err != nil {
				return false
			}
		case bsoncore.TypeArray:
			return true
		default:
			return false
		}
		if v.Type == bsoncore.TypeArray && i < len(parts)-1 {
			return true
		}
	}
	return false
}

func containsUndefined(doc bsoncore.Document) bool {
	return bytes.Contains(doc, []byte{byte(bsoncore.TypeUndefined)}) && hasUndefined(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc})
}

func hasUndefined(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeUndefined:
		return true
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		vals, _ := bsoncore.Document(v.Data).Values()
		for _, x := range vals {
			if hasUndefined(x) {
				return true
			}
		}
	}
	return false
}

// TestKeysProperties checks, on random documents and random compound,
// hashed, sparse and wildcard specs, the invariants every result must meet:
// keys sorted and distinct, each decoding into KeyParts values that
// re-encode to the same bytes, Applies agreeing with the presence of keys,
// the same result on a reused buffer, and every key of a compound index
// built from values the single-field indexes on its fields produce.
func TestKeysProperties(t *testing.T) {
	r := newRand(t)
	g := docGen{r}
	var buf [][]byte
	for range *docsFlag {
		doc := g.doc(0)
		spec := randomSpec(t, r, g)
		fresh, mk, err := spec.Keys(doc, nil)
		reused, mk2, err2 := spec.Keys(doc, buf)
		if (err == nil) != (err2 == nil) || fmt.Sprint(mk) != fmt.Sprint(mk2) {
			t.Fatalf("%s on %s: reusing a buffer changed the result: %v/%v", spec.Key, doc, err, err2)
		}
		if err != nil {
			switch mongoerr.CodeOf(err) {
			case index.CodeCannotIndexParallelArrays, index.CodeAmbiguousFieldName, index.CodeHashedArray:
				continue
			}
			t.Fatalf("%s on %s: %v", spec.Key, doc, err)
		}
		if len(fresh) != len(reused) {
			t.Fatalf("%s on %s: %d keys, %d with a reused buffer", spec.Key, doc, len(fresh), len(reused))
		}
		for i := range fresh {
			if !bytes.Equal(fresh[i], reused[i]) {
				t.Fatalf("%s on %s: key %d differs with a reused buffer", spec.Key, doc, i)
			}
		}
		buf = reused
		if err := checkKeys(spec, doc, fresh); err != nil {
			t.Fatalf("%s on %s: %v", spec.Key, doc, err)
		}
		if !spec.IsWildcard() && !spec.IsHashed() && len(spec.KeyPattern) > 1 && !spec.Sparse && spec.PartialFilterExpression == nil {
			checkCompoundParts(t, spec, doc, fresh)
		}
	}
}

// checkCompoundParts checks that each part of each key of a compound index
// is a key of the single-field index on that field.
func checkCompoundParts(t *testing.T, spec *index.Spec, doc bsoncore.Document, keys [][]byte) {
	t.Helper()
	for i, f := range spec.KeyPattern {
		single, err := index.ParseSpec(bsoncore.NewDocumentBuilder().
			AppendDocument("key", bsoncore.NewDocumentBuilder().AppendInt32(f.Path, 1).Build()).
			AppendString("name", "s").Build())
		if err != nil {
			t.Fatal(err)
		}
		sk, _, err := single.Keys(doc, nil)
		if err != nil {
			t.Fatalf("%s accepts %s but {%s: 1} refuses it: %v", spec.Key, doc, f.Path, err)
		}
		for _, k := range keys {
			vals, _, _ := spec.DecodeKey(k)
			want := keystring.Append(nil, vals[i])
			found := false
			for _, s := range sk {
				if bytes.Equal(s, want) {
					found = true
				}
			}
			if !found {
				t.Fatalf("%s on %s: part %d (%s) of a key is not a key of {%s: 1}", spec.Key, doc, i, vals[i], f.Path)
			}
		}
	}
}

func randomSpec(t *testing.T, r *rand.Rand, g docGen) *index.Spec {
	t.Helper()
	for {
		kb := bsoncore.NewDocumentBuilder()
		seen := map[string]bool{}
		var opts []func(*bsoncore.DocumentBuilder)
		switch r.IntN(6) {
		case 0: // wildcard
			if r.IntN(2) == 0 {
				kb.AppendInt32("$**", 1)
			} else {
				kb.AppendInt32(fieldName[r.IntN(3)]+".$**", -1)
			}
		case 1: // hashed, maybe compound
			kb.AppendString(g.path(), "hashed")
			if r.IntN(2) == 0 {
				kb.AppendInt32(g.path(), 1)
			}
		default:
			for range 1 + r.IntN(3) {
				p := g.path()
				if seen[p] {
					continue
				}
				seen[p] = true
				kb.AppendInt32(p, int32(1-2*r.IntN(2)))
			}
			if r.IntN(3) == 0 {
				opts = append(opts, func(b *bsoncore.DocumentBuilder) { b.AppendBoolean("sparse", true) })
			}
		}
		if r.IntN(5) == 0 {
			opts = append(opts, func(b *bsoncore.DocumentBuilder) {
				b.AppendDocument("partialFilterExpression", bsoncore.NewDocumentBuilder().
					AppendDocument(g.path(), bsoncore.NewDocumentBuilder().AppendInt32("$gte", 1).Build()).Build())
			})
		}
		b := bsoncore.NewDocumentBuilder().AppendDocument("key", kb.Build()).AppendString("name", "r")
		for _, o := range opts {
			o(b)
		}
		spec, err := index.ParseSpec(b.Build())
		if err != nil {
			// A duplicate hashed path, a sparse partial index…: draw again.
			continue
		}
		return spec
	}
}

// TestKeyOrderIsIndexOrder checks invariant "Key order equals index order"
// for compound keys: for random pairs of documents without arrays, the
// keys of a two-field index compare as MongoDB compares the tuples of the
// fields' values, each in its direction.
func TestKeyOrderIsIndexOrder(t *testing.T) {
	r := newRand(t)
	g := docGen{r}
	for range *docsFlag {
		da, db := g.doc(0), g.doc(0)
		pa, pb := g.path(), g.path()
		if pa == pb {
			continue
		}
		dirA, dirB := int32(1-2*r.IntN(2)), int32(1-2*r.IntN(2))
		spec, err := index.ParseSpec(bsoncore.NewDocumentBuilder().
			AppendDocument("key", bsoncore.NewDocumentBuilder().AppendInt32(pa, dirA).AppendInt32(pb, dirB).Build()).
			AppendString("name", "o").Build())
		if err != nil {
			t.Fatal(err)
		}
		ka, mka, errA := spec.Keys(da, nil)
		kb, mkb, errB := spec.Keys(db, nil)
		if errA != nil || errB != nil || mka.IsMultikey() || mkb.IsMultikey() {
			continue
		}
		va, _, _ := spec.DecodeKey(ka[0])
		vb, _, _ := spec.DecodeKey(kb[0])
		want := bsonx.Compare(va[0], vb[0]) * int(dirA)
		if want == 0 {
			want = bsonx.Compare(va[1], vb[1]) * int(dirB)
		}
		if got := bytes.Compare(ka[0], kb[0]); got != want {
			t.Fatalf("keys of %s and %s in %s compare %d, values compare %d", da, db, spec.Key, got, want)
		}
	}
}
