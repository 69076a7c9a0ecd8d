package update

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cairndb/cairn/internal/invariants"
	"github.com/cairndb/cairn/internal/testcorpus"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// applyBoth applies u to doc by the flat path (as Apply does) and by the
// tree alone, and fails the test unless both give the same document,
// modified flag and error; so must ApplyTo over a used buffer, once too
// short for the new document and once long enough.
func applyBoth(t *testing.T, u *Update, doc bsoncore.Document, ctx ApplyContext) (bsoncore.Document, bool, error) {
	t.Helper()
	got, mod, err := u.Apply(doc, ctx)
	// The same operator update without its flat list: the tree alone.
	tree := &Update{kind: u.kind, root: u.tree(), positional: u.positional, filters: u.filters}
	want, wantMod, wantErr := tree.Apply(doc, ctx)
	if fmt.Sprint(err) != fmt.Sprint(wantErr) || mod != wantMod || !bytes.Equal(got, want) {
		t.Fatalf("flat path: %s, %v, %v; tree: %s, %v, %v", bsoncore.Document(got), mod, err, bsoncore.Document(want), wantMod, wantErr)
	}
	for _, room := range []int{len(doc) / 2, 2*len(doc) + 64} {
		used := bytes.Repeat([]byte{0xee}, room)
		into, intoMod, intoErr := u.ApplyTo(used, doc, ctx)
		if fmt.Sprint(intoErr) != fmt.Sprint(err) || intoMod != mod || !bytes.Equal(into, got) {
			t.Fatalf("ApplyTo over %d used bytes: %s, %v, %v; Apply: %s, %v, %v", room, bsoncore.Document(into), intoMod, intoErr, bsoncore.Document(got), mod, err)
		}
	}
	return got, mod, err
}

func flatDoc(t *testing.T, s string) bsoncore.Document {
	t.Helper()
	d, err := testcorpus.ParseDoc(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestFlatSetMatchesTree: which updates take the flat path, and that on
// every document it gives what the tree gives — the new bytes, the
// modified flag (a no-op returns the input), the error.
func TestFlatSetMatchesTree(t *testing.T) {
	dup := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).AppendInt32("a", 1).AppendInt32("a", 2).Build()
	deep := `{"x": 1}`
	for range 110 {
		deep = `{"x": ` + deep + `}`
	}
	truncated := flatDoc(t, `{"_id": 1, "a": "abc"}`)
	truncated = append(truncated[:len(truncated)-6:len(truncated)-6], 0) // a's string runs past the end
	truncated[0] = byte(len(truncated))
	for _, c := range []struct {
		name   string
		update string
		doc    bsoncore.Document
		flat   bool   // the update takes the flat path
		want   string // the new document; "" when not modified
		insert bool   // as an upsert's insert
		fails  bool   // Apply returns an error
	}{
		{name: "one field changed", update: `{"$set": {"b": "new"}}`, doc: flatDoc(t, `{"_id": 1, "a": 1, "b": "old", "c": 3}`), flat: true,
			want: `{"_id": 1, "a": 1, "b": "new", "c": 3}`},
		{name: "a longer and a shorter value", update: `{"$set": {"a": "longer value", "c": 9}}`, doc: flatDoc(t, `{"_id": 1, "a": "s", "b": 2, "c": "was a string"}`), flat: true,
			want: `{"_id": 1, "a": "longer value", "b": 2, "c": 9}`},
		{name: "same bytes: a no-op", update: `{"$set": {"a": 1}}`, doc: flatDoc(t, `{"_id": 1, "a": 1}`), flat: true},
		{name: "1.0 over 1: a change of type", update: `{"$set": {"a": {"$numberDouble": "1.0"}}}`, doc: flatDoc(t, `{"_id": 1, "a": 1}`), flat: true,
			want: `{"_id": 1, "a": {"$numberDouble": "1.0"}}`},
		{name: "one of two fields the same", update: `{"$set": {"a": 1, "b": 5}}`, doc: flatDoc(t, `{"_id": 1, "a": 1, "b": 2}`), flat: true,
			want: `{"_id": 1, "a": 1, "b": 5}`},
		{name: "a field the document lacks: the tree appends it", update: `{"$set": {"a": 2, "z": 1}}`, doc: flatDoc(t, `{"_id": 1, "a": 1}`), flat: true,
			want: `{"_id": 1, "a": 2, "z": 1}`},
		{name: "duplicate names: the first is set", update: `{"$set": {"a": 7}}`, doc: dup, flat: true,
			want: `{"_id": 1, "a": 7, "a": 2}`},
		{name: "a document value", update: `{"$set": {"a": {"p": [1, 2]}}}`, doc: flatDoc(t, `{"_id": 1, "a": {"p": 1}, "b": 1}`), flat: true,
			want: `{"_id": 1, "a": {"p": [1, 2]}, "b": 1}`},
		{name: "too deep a value", update: `{"$set": {"a": ` + deep + `}}`, doc: flatDoc(t, `{"_id": 1, "a": 1}`), flat: true, fails: true},
		{name: "a malformed document: the tree's error", update: `{"$set": {"a": "x"}}`, doc: truncated, flat: true, fails: true},
		{name: "an upsert's insert", update: `{"$set": {"a": 2}}`, doc: flatDoc(t, `{"_id": 1, "a": 1}`), flat: true, insert: true,
			want: `{"_id": 1, "a": 2}`},
		{name: "_id: the tree's check", update: `{"$set": {"_id": 2}}`, doc: flatDoc(t, `{"_id": 1}`), fails: true},
		{name: "a dotted path", update: `{"$set": {"a.b": 2}}`, doc: flatDoc(t, `{"_id": 1, "a": {"b": 1}}`),
			want: `{"_id": 1, "a": {"b": 2}}`},
		{name: "another operator beside", update: `{"$set": {"a": 2}, "$inc": {"n": 1}}`, doc: flatDoc(t, `{"_id": 1, "a": 1, "n": 1}`),
			want: `{"_id": 1, "a": 2, "n": 2}`},
		{name: "$setOnInsert", update: `{"$setOnInsert": {"a": 2}}`, doc: flatDoc(t, `{"_id": 1, "a": 1}`)},
		{name: "nine fields", update: `{"$set": {"a": 2, "b": 2, "c": 2, "d": 2, "e": 2, "f": 2, "g": 2, "h": 2, "i": 2}}`, doc: flatDoc(t, `{"_id": 1}`),
			want: `{"_id": 1, "a": 2, "b": 2, "c": 2, "d": 2, "e": 2, "f": 2, "g": 2, "h": 2, "i": 2}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			u, err := ParseDocument(flatDoc(t, c.update), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if (u.flat != nil) != c.flat {
				t.Fatalf("flat path %v, want %v", u.flat != nil, c.flat)
			}
			got, mod, err := applyBoth(t, u, c.doc, ApplyContext{ArrayPos: -1, IsUpsertInsert: c.insert, Now: time.Unix(0, 0)})
			switch {
			case (err != nil) != c.fails:
				t.Fatalf("error %v, want one: %v", err, c.fails)
			case c.want == "" && mod:
				t.Fatalf("modified: %s", bsoncore.Document(got))
			case c.want == "" && err == nil && !bytes.Equal(got, c.doc):
				t.Fatal("a no-op did not return its input")
			case c.want != "" && (err != nil || !bytes.Equal(got, flatDocOrDup(t, c.want, dup))):
				t.Fatalf("got %s, %v; want %s", bsoncore.Document(got), err, c.want)
			}
		})
	}
}

// flatDocOrDup parses want, except the duplicate-name stanza's, which
// extended JSON cannot spell.
func flatDocOrDup(t *testing.T, want string, dup bsoncore.Document) bsoncore.Document {
	if want == `{"_id": 1, "a": 7, "a": 2}` {
		d := bytes.Clone(dup)
		d[bytes.Index(d, []byte("a\x00"))+2] = 7
		return d
	}
	return flatDoc(t, want)
}

// TestFlatSetRandom applies random $sets of top-level fields to random
// documents (some fields missing, duplicated, same values, other types)
// by the flat path and by the tree, which must agree.
func TestFlatSetRandom(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	names := []string{"a", "b", "c", "d", "e", "f", "_id", "$x", "a.b"}
	value := func(b *bsoncore.DocumentBuilder, name string) {
		switch r.IntN(5) {
		case 0:
			b.AppendInt32(name, int32(r.IntN(3)))
		case 1:
			b.AppendDouble(name, float64(r.IntN(3)))
		case 2:
			b.AppendString(name, strings.Repeat("s", r.IntN(3)))
		case 3:
			b.AppendDocument(name, bsoncore.NewDocumentBuilder().AppendInt32("p", int32(r.IntN(2))).Build())
		default:
			b.AppendNull(name)
		}
	}
	flat := 0
	for range 5000 {
		db := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1)
		for range r.IntN(8) {
			value(db, names[r.IntN(6)])
		}
		doc := db.Build()
		sb := bsoncore.NewDocumentBuilder()
		used := map[string]bool{}
		for range 1 + r.IntN(4) {
			n := names[r.IntN(len(names)-2)]
			if r.IntN(20) == 0 {
				n = names[6+r.IntN(3)]
			}
			if used[n] {
				continue
			}
			used[n] = true
			value(sb, n)
		}
		u, err := ParseDocument(bsoncore.NewDocumentBuilder().AppendDocument("$set", sb.Build()).Build(), Options{})
		if err != nil {
			continue // a $-prefixed name or a conflict: not an update
		}
		if u.flat != nil {
			flat++
		}
		applyBoth(t, u, doc, ApplyContext{ArrayPos: -1})
	}
	if flat < 1000 {
		t.Fatalf("only %d of 5,000 updates took the flat path", flat)
	}
}

// TestFlatParseAgrees: parseFlat takes a single $set exactly when the
// tree's parse accepts it and lists it as flat, and then gives the tree's
// fields, order and tree (invariant "Flat parse agrees"). Random $sets
// of names that sort numerically ("9" before "10"), repeat, hold a dot,
// are empty, _id or $-prefixed, up to ten fields; seeded, the seed logged.
func TestFlatParseAgrees(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	names := []string{"a", "b", "c", "field0", "field1", "10", "9", "09", "z", "a.b", "", "_id", "$x"}
	took, declined := 0, 0
	for range 20000 {
		sb := bsoncore.NewDocumentBuilder()
		for range r.IntN(11) {
			n := names[r.IntN(10)]
			if r.IntN(15) == 0 {
				n = names[9+r.IntN(4)]
			}
			switch r.IntN(3) {
			case 0:
				sb.AppendInt32(n, int32(r.IntN(3)))
			case 1:
				sb.AppendString(n, strings.Repeat("s", r.IntN(4)))
			default:
				sb.AppendDocument(n, bsoncore.NewDocumentBuilder().AppendInt32("p", 1).Build())
			}
		}
		ub := bsoncore.NewDocumentBuilder()
		switch r.IntN(12) {
		case 0:
			ub.AppendDocument("$setOnInsert", sb.Build())
		case 1:
			ub.AppendDocument("$set", sb.Build()).AppendDocument("$inc", bsoncore.NewDocumentBuilder().AppendInt32("n", 1).Build())
		default:
			ub.AppendDocument("$set", sb.Build())
		}
		upd := ub.Build()
		flat := parseFlat(bytes.Clone(upd))
		tree, err := parseTree(bytes.Clone(upd), nil, Options{})
		switch {
		case flat == nil && err == nil && tree.flat != nil:
			t.Fatalf("%v: the tree lists it flat, parseFlat declined", bsoncore.Document(upd))
		case flat == nil:
			declined++
		case err != nil:
			t.Fatalf("%v: parseFlat took it, the tree refused it: %v", bsoncore.Document(upd), err)
		default:
			if why := sameFlat(flat, tree); why != "" {
				t.Fatalf("%v: %s", bsoncore.Document(upd), why)
			}
			took++
		}
	}
	if took < 2000 || declined < 2000 {
		t.Fatalf("parseFlat took %d and declined %d of 20,000: want both at least 2,000", took, declined)
	}
	t.Logf("took %d, declined %d", took, declined)
}

// TestFlatParseAllocs bounds a flat $set's parse (YCSB's update): its
// copy of the bytes, its names' string and the Update, whose one field's
// list is its own (the tree's parse made ten).
func TestFlatParseAllocs(t *testing.T) {
	const bound = 3
	upd := flatDoc(t, `{"$set": {"field0": "a value"}}`)
	n := testing.AllocsPerRun(1000, func() {
		if u, err := ParseDocument(upd, Options{}); err != nil || u.flat == nil {
			t.Fatalf("%v, flat %v", err, u.flat)
		}
	})
	switch {
	case invariants.Enabled:
		t.Logf("allocations not compared in an invariants build (the tree's parse beside): %.1f", n)
	case n > bound:
		t.Errorf("%.1f allocations per flat parse, want at most %d", n, bound)
	}
}
