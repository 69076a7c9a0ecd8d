package collation

import (
	"bytes"
	"math/rand"
	"sort"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

func mustDoc(t *testing.T, d bson.D) bsoncore.Document {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustParse(t *testing.T, d bson.D) *Collator {
	t.Helper()
	c, err := Parse(mustDoc(t, d))
	if err != nil {
		t.Fatalf("Parse(%v): %v", d, err)
	}
	return c
}

// TestParseErrors checks the codes MongoDB's collator factory answers with.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		spec bson.D
		code mongoerr.Code
	}{
		{bson.D{}, mongoerr.NoSuchKey},
		{bson.D{{Key: "locale", Value: 1}}, mongoerr.TypeMismatch},
		{bson.D{{Key: "locale", Value: ""}}, mongoerr.BadValue},
		{bson.D{{Key: "locale", Value: "xx"}}, mongoerr.BadValue},
		{bson.D{{Key: "locale", Value: "de@collation=phonebook"}}, mongoerr.InvalidOptions},
		{bson.D{{Key: "locale", Value: "simple"}, {Key: "strength", Value: 2}}, mongoerr.FailedToParse},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 6}}, mongoerr.FailedToParse},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: "2"}}, mongoerr.TypeMismatch},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "caseFirst", Value: "first"}}, mongoerr.FailedToParse},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "caseLevel", Value: 1}}, mongoerr.TypeMismatch},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "bogus", Value: true}}, mongoerr.FailedToParse},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "version", Value: "1.0"}}, mongoerr.IncompatibleCollationVer},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 1}, {Key: "backwards", Value: true}}, mongoerr.BadValue},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}, {Key: "caseFirst", Value: "upper"}}, mongoerr.BadValue},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "alternate", Value: "shifted"}, {Key: "maxVariable", Value: "space"}}, mongoerr.InvalidOptions},
	} {
		_, err := Parse(mustDoc(t, tc.spec))
		if got := mongoerr.CodeOf(err); got != tc.code {
			t.Errorf("Parse(%v) = %v (code %d), want code %d", tc.spec, err, got, tc.code)
		}
	}
	if c := mustParse(t, bson.D{{Key: "locale", Value: "simple"}}); c != nil {
		t.Error("simple is not the nil collator")
	}
}

// TestOptions checks each option's effect on order.
func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		spec bson.D
		a, b string
		want int
	}{
		{bson.D{{Key: "locale", Value: "en"}}, "a", "B", -1}, // simple would say B < a
		{bson.D{{Key: "locale", Value: "en"}}, "a", "A", -1},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}}, "a", "A", 0},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}}, "é", "e", 1},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 1}}, "é", "E", 0},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 1}, {Key: "caseLevel", Value: true}}, "é", "E", -1},
		// x/text's caseLevel compares the whole tertiary level, diacritics
		// included: ICU says 0 here (see the package comment).
		{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 1}, {Key: "caseLevel", Value: true}}, "é", "e", 1},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 1}, {Key: "caseLevel", Value: true}}, "Ab", "ab", 1},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "caseFirst", Value: "upper"}}, "A", "a", -1},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "caseFirst", Value: "lower"}}, "a", "A", -1},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "caseFirst", Value: "upper"}}, "Ab", "aB", -1},
		{bson.D{{Key: "locale", Value: "en"}}, "10", "9", -1},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "numericOrdering", Value: true}}, "10", "9", 1},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "alternate", Value: "shifted"}}, "a-b", "ab", 0}, // punctuation ignored up to strength 3
		{bson.D{{Key: "locale", Value: "en"}, {Key: "alternate", Value: "shifted"}}, "a-c", "ab", 1},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "alternate", Value: "shifted"}, {Key: "strength", Value: 4}}, "a-b", "ab", -1},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "alternate", Value: "shifted"}, {Key: "strength", Value: 3}}, "a b", "ab", 0},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 3}}, "a b", "ab", -1},
		{bson.D{{Key: "locale", Value: "fr"}, {Key: "backwards", Value: true}}, "cote", "côté", -1},
		{bson.D{{Key: "locale", Value: "fr"}, {Key: "backwards", Value: true}}, "côte", "coté", -1},
		{bson.D{{Key: "locale", Value: "fr"}}, "côte", "coté", 1},
		{bson.D{{Key: "locale", Value: "sv"}}, "ö", "z", 1}, // Swedish ö after z
		// x/text differs from ICU here (0 at strength 2): see the package comment.
		{bson.D{{Key: "locale", Value: "de"}, {Key: "strength", Value: 2}}, "Straße", "STRASSE", 1},
		{bson.D{{Key: "locale", Value: "de"}, {Key: "strength", Value: 1}}, "Straße", "STRASSE", 0},
		{bson.D{{Key: "locale", Value: "de"}}, "ö", "z", -1},
	} {
		c := mustParse(t, tc.spec)
		if got := c.Compare([]byte(tc.a), []byte(tc.b)); got != tc.want {
			t.Errorf("%v: Compare(%q, %q) = %d, want %d", tc.spec, tc.a, tc.b, got, tc.want)
		}
		ka, kb := c.AppendKey(nil, []byte(tc.a)), c.AppendKey(nil, []byte(tc.b))
		if got := bytes.Compare(ka, kb); got != tc.want {
			t.Errorf("%v: keys of %q and %q compare %d, want %d", tc.spec, tc.a, tc.b, got, tc.want)
		}
	}
}

// TestSpecDocument checks the normalized spec MongoDB shows back.
func TestSpecDocument(t *testing.T) {
	c := mustParse(t, bson.D{{Key: "locale", Value: "fr"}, {Key: "strength", Value: 1}})
	want := `{"locale": "fr","caseLevel": false,"caseFirst": "off","strength": {"$numberInt":"1"},"numericOrdering": false,"alternate": "non-ignorable","maxVariable": "punct","normalization": false,"backwards": false,"version": "57.1"}`
	if got := bson.Raw(c.Document()).String(); got != want {
		t.Errorf("Document() = %s\nwant %s", got, want)
	}
	again, err := Parse(c.Document())
	if err != nil || again != c || !Equal(again, c) {
		t.Errorf("the normalized spec does not parse back to the same collator: %v", err)
	}
	if Equal(c, nil) || !Equal(nil, nil) {
		t.Error("Equal with the simple collation is wrong")
	}
}

// TestKeysOrderAsCompare checks the invariant "Keys order as Compare" over
// random strings built from letters that collations treat differently.
func TestKeysOrderAsCompare(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	alphabet := []rune("aAbBeéEÉ zZöÖ-0129 ßçÇ")
	word := func() string {
		r := make([]rune, 1+rng.Intn(6))
		for i := range r {
			r[i] = alphabet[rng.Intn(len(alphabet))]
		}
		return string(r)
	}
	for _, spec := range []bson.D{
		{{Key: "locale", Value: "en"}},
		{{Key: "locale", Value: "en"}, {Key: "strength", Value: 1}},
		{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}, {Key: "numericOrdering", Value: true}},
		{{Key: "locale", Value: "fr"}, {Key: "backwards", Value: true}},
		{{Key: "locale", Value: "en"}, {Key: "caseFirst", Value: "upper"}},
		{{Key: "locale", Value: "en"}, {Key: "alternate", Value: "shifted"}},
		{{Key: "locale", Value: "de"}, {Key: "strength", Value: 1}, {Key: "caseLevel", Value: true}},
	} {
		c := mustParse(t, spec)
		words := make([]string, 300)
		for i := range words {
			words[i] = word()
		}
		sort.Slice(words, func(i, j int) bool { return c.Compare([]byte(words[i]), []byte(words[j])) < 0 })
		for i := range words {
			for j := i; j < len(words) && j < i+20; j++ {
				cmp := c.Compare([]byte(words[i]), []byte(words[j]))
				kc := bytes.Compare(c.AppendKey(nil, []byte(words[i])), c.AppendKey(nil, []byte(words[j])))
				if cmp != kc {
					t.Fatalf("%v: Compare(%q, %q) = %d but keys compare %d", spec, words[i], words[j], cmp, kc)
				}
			}
		}
	}
}
