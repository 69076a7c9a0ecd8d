package docdiff

import (
	"bytes"
	"fmt"
	"github.com/cairndb/cairn/internal/bsonx/bsonxtest"
	"math/rand/v2"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestDiffCases: the diff of each pair, what applying it gives, and the
// updateDescription a change stream would show.
func TestDiffCases(t *testing.T) {
	for _, tc := range []struct {
		name, old, new string
		diff           string // "" for nil (equal, or only a replacement)
		updated        string
		removed        []string
		truncated      []Truncation
	}{
		{"equal", `{"a": 1}`, `{"a": 1}`, "", `{}`, nil, nil},
		{"set, unset, add", `{"_id": 1, "a": 1, "b": 2}`, `{"_id": 1, "a": 5, "c": 3}`,
			`{"d": {"b": false}, "u": {"a": 5}, "i": {"c": 3}}`, `{"a": 5, "c": 3}`, []string{"b"}, nil},
		{"nested object", `{"_id": 1, "o": {"x": 1, "y": "a long enough string value"}}`, `{"_id": 1, "o": {"x": 2, "y": "a long enough string value"}}`,
			`{"so": {"u": {"x": 2}}}`, `{"o.x": 2}`, nil, nil},
		{"array element and growth", `{"_id": 1, "arr": [1, 2, 3, "a long enough string value"]}`, `{"_id": 1, "arr": [1, 9, 3, "a long enough string value", 5]}`,
			`{"sarr": {"a": true, "u1": 9, "u4": 5}}`, `{"arr.1": 9, "arr.4": 5}`, nil, nil},
		{"array truncated", `{"_id": 1, "arr": [1, 2, 3, "a long enough string value"]}`, `{"_id": 1, "arr": [1, 2]}`,
			`{"sarr": {"a": true, "l": 2}}`, `{}`, nil, []Truncation{{"arr", 2}}},
		{"a small object is replaced whole", `{"_id": 1, "o": {"x": 1}}`, `{"_id": 1, "o": {"x": 2}}`,
			`{"u": {"o": {"x": 2}}}`, `{"o": {"x": 2}}`, nil, nil},
		{"reordered top-level fields: a replacement", `{"a": 1, "b": 2}`, `{"b": 2, "a": 1}`, "", "", nil, nil},
		{"reordered nested fields: the object replaced", `{"_id": 1, "o": {"x": 1, "y": 2}}`, `{"_id": 1, "o": {"y": 2, "x": 1}}`,
			`{"u": {"o": {"y": 2, "x": 1}}}`, `{"o": {"y": 2, "x": 1}}`, nil, nil},
		{"type change", `{"_id": 1, "a": "1"}`, `{"_id": 1, "a": 1}`, `{"u": {"a": 1}}`, `{"a": 1}`, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, new := ext(t, tc.old), ext(t, tc.new)
			d := Diff(old, new)
			if tc.diff == "" {
				if d != nil {
					t.Fatalf("diff %s, want none", d)
				}
				return
			}
			if want := ext(t, tc.diff); !bytes.Equal(d, want) {
				t.Fatalf("diff %s, want %s", d, want)
			}
			got, err := Apply(old, d)
			if err != nil || !bytes.Equal(got, new) {
				t.Fatalf("Apply = %s, %v; want %s", got, err, new)
			}
			desc, err := Describe(d)
			if err != nil {
				t.Fatal(err)
			}
			if want := ext(t, tc.updated); !bytes.Equal(desc.Updated, want) || !slices.Equal(desc.Removed, tc.removed) || !slices.Equal(desc.Truncated, tc.truncated) {
				t.Fatalf("description %s %v %v, want %s %v %v", desc.Updated, desc.Removed, desc.Truncated, want, tc.removed, tc.truncated)
			}
		})
	}
}

// randomValue makes a small random value, nested to depth.
func randomValue(rng *rand.Rand, depth int) any {
	switch k := rng.IntN(6); {
	case k == 0 && depth > 0:
		d := bson.D{}
		for i := range rng.IntN(4) {
			d = append(d, bson.E{Key: fmt.Sprintf("f%d", i+rng.IntN(3)*4), Value: randomValue(rng, depth-1)})
		}
		return dedupe(d)
	case k == 1 && depth > 0:
		a := bson.A{}
		for range rng.IntN(5) {
			a = append(a, randomValue(rng, depth-1))
		}
		return a
	case k == 2:
		return fmt.Sprintf("s%d-%s", rng.IntN(5), "padding to make values worth diffing")
	case k == 3:
		return nil
	default:
		return rng.IntN(4)
	}
}

func dedupe(d bson.D) bson.D {
	seen := map[string]bool{}
	var out bson.D
	for _, e := range d {
		if !seen[e.Key] {
			seen[e.Key] = true
			out = append(out, e)
		}
	}
	return out
}

// mutate changes d at random: set, unset, add fields, recurse.
func mutate(rng *rand.Rand, v any, depth int) any {
	switch x := v.(type) {
	case bson.D:
		out := slices.Clone(x)
		for range 1 + rng.IntN(3) {
			switch op := rng.IntN(6); {
			case op == 0 && len(out) > 0:
				i := rng.IntN(len(out))
				out = slices.Delete(out, i, i+1)
			case op == 1:
				out = dedupe(append(out, bson.E{Key: fmt.Sprintf("n%d", rng.IntN(6)), Value: randomValue(rng, depth)}))
			case op == 2 && len(out) > 1 && rng.IntN(4) == 0:
				i := rng.IntN(len(out) - 1)
				out[i], out[i+1] = out[i+1], out[i] // a reorder
			case len(out) > 0:
				i := rng.IntN(len(out))
				out[i].Value = mutate(rng, out[i].Value, depth)
			}
		}
		return out
	case bson.A:
		out := slices.Clone(x)
		switch op := rng.IntN(4); {
		case op == 0 && len(out) > 0:
			out = out[:rng.IntN(len(out))]
		case op == 1:
			out = append(out, randomValue(rng, depth))
		case len(out) > 0:
			i := rng.IntN(len(out))
			out[i] = mutate(rng, out[i], depth)
		}
		return out
	default:
		return randomValue(rng, depth)
	}
}

// TestDiffApplyRandom checks "Apply inverts Diff" and "Never larger than
// the value" over random documents and random changes to them.
func TestDiffApplyRandom(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	diffs, replacements := 0, 0
	for i := range 5000 {
		base := bson.D{{Key: "_id", Value: i}}
		for j := range 1 + rng.IntN(6) {
			base = append(base, bson.E{Key: fmt.Sprintf("f%d", j), Value: randomValue(rng, 3)})
		}
		changed := mutate(rng, base, 3).(bson.D)
		old, _ := bson.Marshal(base)
		new, _ := bson.Marshal(changed)
		d := Diff(old, new)
		if d == nil {
			if !bytes.Equal(old, new) {
				replacements++
			}
			continue
		}
		diffs++
		got, err := Apply(old, d)
		if err != nil || !bytes.Equal(got, new) {
			t.Fatalf("seed %d case %d: Apply(%s, %s) = %s, %v; want %s", seed, i, bson.Raw(old), bson.Raw(d), bson.Raw(got), err, bson.Raw(new))
		}
		if _, err := Describe(d); err != nil {
			t.Fatalf("seed %d case %d: Describe: %v", seed, i, err)
		}
	}
	t.Logf("%d diffs applied back exactly, %d changes only a replacement expresses", diffs, replacements)
	if diffs < 1000 {
		t.Fatalf("only %d diffs", diffs)
	}
}

// TestSameNamesAsFields checks that diffSameNames, the fast path for
// documents with the same field names, writes exactly what diffFields
// writes wherever it answers, and answers for every change of values only.
func TestSameNamesAsFields(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	answered := 0
	for i := range 5000 {
		base := bson.D{{Key: "_id", Value: i}}
		for j := range 1 + rng.IntN(8) {
			base = append(base, bson.E{Key: fmt.Sprintf("f%d", j), Value: randomValue(rng, 3)})
		}
		changed := mutate(rng, base, 3).(bson.D)
		valuesOnly := rng.IntN(2) == 0
		if valuesOnly {
			changed = slices.Clone(base)
			k := rng.IntN(len(changed))
			changed[k].Value = mutate(rng, changed[k].Value, 3)
		}
		old, _ := bson.Marshal(base)
		new, _ := bson.Marshal(changed)
		fast, ok := diffSameNames(nil, old, new)
		if !ok {
			if valuesOnly {
				t.Fatalf("seed %d case %d: no answer for a change of values only: %s → %s", seed, i, bson.Raw(old), bson.Raw(new))
			}
			continue
		}
		answered++
		if general, gok := diffFields(old, new); !gok || !bytes.Equal(fast, general) {
			t.Fatalf("seed %d case %d: %s → %s: diffSameNames %s, diffFields %s (%v)", seed, i, bson.Raw(old), bson.Raw(new), bson.Raw(fast), bson.Raw(general), gok)
		}
	}
	if answered < 2500 {
		t.Fatalf("only %d answers", answered)
	}
	// A repeated name or one out of place: diffFields decides.
	for _, pair := range [][2]string{
		{`{"a": 1, "a": 2}`, `{"a": 1, "a": 3}`},
		{`{"f1": 1, "f2": 2, "g1": 3, "f2": 4}`, `{"f1": 1, "f2": 5, "g1": 3, "f2": 4}`}, // repeated after a name of its filter bit
		{`{"f1": 1, "x": 2, "f1": 3}`, `{"f1": 1, "x": 2, "f1": 4}`},
		{`{"a": 1, "b": 2}`, `{"b": 2, "a": 1}`},
		{`{"a": 1, "b": 2}`, `{"a": 1}`},
		{`{"a": 1}`, `{"a": 1, "b": 2}`},
	} {
		if d, ok := diffSameNames(nil, ext(t, pair[0]), ext(t, pair[1])); ok {
			t.Errorf("%s → %s: diffSameNames answered %s", pair[0], pair[1], bson.Raw(d))
		}
	}
}

// FuzzDiffApply checks "Apply inverts Diff" on arbitrary pairs of BSON
// documents, and that Apply never panics on an arbitrary diff.
func FuzzDiffApply(f *testing.F) {
	seed := func(a, b string) {
		x, _ := bson.Marshal(mustD(a))
		y, _ := bson.Marshal(mustD(b))
		f.Add(x, y)
	}
	seed(`{"a": 1, "b": [1, 2, {"c": "some padding text here"}]}`, `{"a": 2, "b": [1, 3, {"c": "some padding text here", "d": 1}]}`)
	seed(`{"o": {"x": 1, "y": "a long enough string value"}}`, `{"o": {"y": "a long enough string value"}}`)
	f.Fuzz(func(t *testing.T, a, b []byte) {
		old, new := bsoncore.Document(a), bsoncore.Document(b)
		whole := func(d bsoncore.Document) bool { // well-formed all the way down
			var x bson.D
			if bson.Unmarshal(d, &x) != nil {
				return false
			}
			again, err := bson.Marshal(x)
			return err == nil && bytes.Equal(again, d)
		}
		if !whole(old) || !whole(new) {
			_, _ = Apply(old, new) // an arbitrary diff: errors, never panics
			return
		}
		_, _ = Apply(old, new)
		d := Diff(old, new)
		if d == nil {
			return
		}
		got, err := Apply(old, d)
		if err != nil || !bytes.Equal(got, new) {
			t.Fatalf("Apply(%s, %s) = %s, %v; want %s", bson.Raw(old), bson.Raw(d), bson.Raw(got), err, bson.Raw(new))
		}
	})
}

func mustD(s string) bson.D {
	var d bson.D
	if err := bson.UnmarshalExtJSON([]byte(s), false, &d); err != nil {
		panic(err)
	}
	return d
}

func ext(t testing.TB, s string) bsoncore.Document { t.Helper(); return bsonxtest.ExtDoc(t, s) }

// TestDescribeDisambiguated: MongoDB 7.0's disambiguatedPaths names the
// parts of each path whose dots are ambiguous (a field named by digits, a
// field name holding a dot), array indexes as numbers; other paths get
// none.
func TestDescribeDisambiguated(t *testing.T) {
	for _, tc := range []struct{ name, diff, want string }{
		{"plain paths", `{"u": {"a": 1}, "sb": {"a": true, "u0": 2}}`, `{}`},
		{"a digits field in an object", `{"so": {"u": {"0": 1}}}`, `{"o.0": ["o", "0"]}`},
		{"an index below a digits field", `{"so": {"s1": {"a": true, "u2": 5}}}`, `{"o.1.2": ["o", "1", {"$numberInt": "2"}]}`},
		{"a dotted field name removed", `{"d": {"a.b": false}}`, `{"a.b": ["a.b"]}`},
		{"a truncated array under a digits field", `{"s7": {"a": true, "l": 1}}`, `{"7": ["7"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			desc, err := Describe(ext(t, tc.diff))
			if err != nil {
				t.Fatal(err)
			}
			if want := ext(t, tc.want); !bytes.Equal(desc.Disambiguated, want) {
				t.Fatalf("disambiguated %s, want %s", bson.Raw(desc.Disambiguated), bson.Raw(want))
			}
		})
	}
}

// TestAppendDiff: AppendDiff appends Diff's bytes after what dst holds
// (values only, written in place; fields removed and added; a nested
// diff), and leaves dst as it was where Diff returns nil (equal
// documents, an order no diff can say).
func TestAppendDiff(t *testing.T) {
	for _, tc := range []struct {
		name, old, new string
		ok             bool
	}{
		{"one value", `{"_id": 1, "a": "x", "b": 2}`, `{"_id": 1, "a": "y", "b": 2}`, true},
		{"two values", `{"_id": 1, "a": "x", "b": 2}`, `{"_id": 1, "a": "y", "b": 3}`, true},
		{"a field added and one removed", `{"_id": 1, "a": "x", "b": 2}`, `{"_id": 1, "b": 2, "c": 3}`, true},
		{"a nested diff", `{"_id": 1, "o": {"p": 1, "q": "a long enough value"}}`, `{"_id": 1, "o": {"p": 2, "q": "a long enough value"}}`, true},
		{"equal", `{"_id": 1, "a": "x"}`, `{"_id": 1, "a": "x"}`, false},
		{"reordered", `{"_id": 1, "a": 1, "b": 2}`, `{"_id": 1, "b": 2, "a": 1}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, new := ext(t, tc.old), ext(t, tc.new)
			prefix := []byte("prefix")
			got, ok := AppendDiff(slices.Clip(prefix), old, new)
			if ok != tc.ok {
				t.Fatalf("ok %v, want %v", ok, tc.ok)
			}
			want := append(slices.Clone(prefix), Diff(old, new)...)
			if !bytes.Equal(got, want) {
				t.Fatalf("got %q, want %q", got, want)
			}
			if ok {
				if back, err := Apply(old, got[len(prefix):]); err != nil || !bytes.Equal(back, new) {
					t.Fatalf("Apply gives %s (%v), want %s", bson.Raw(back), err, bson.Raw(new))
				}
			}
		})
	}
}
