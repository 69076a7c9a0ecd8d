package query

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/collation"
)

// TestCollatedInSearch: an $in under a collation finds a value by binary
// search in the collation's order (inPred.sortedUnder), and matches exactly
// what testing every listed value with bsonx.EqualWith matches — strings
// in other cases and accents, numbers as strings under numericOrdering,
// mixed types — under four collations.
func TestCollatedInSearch(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	word := func() string {
		const letters = "aAbBeEéÉ1029"
		var b strings.Builder
		for n := 1 + rng.IntN(4); n > 0; n-- {
			b.WriteString(string([]rune(letters)[rng.IntN(len([]rune(letters)))]))
		}
		return b.String()
	}
	value := func() any {
		switch rng.IntN(6) {
		case 0:
			return rng.IntN(20)
		case 1:
			return bson.D{{Key: "s", Value: word()}}
		default:
			return word()
		}
	}
	var colls []bsonx.Collator
	for _, spec := range []bson.D{
		{{Key: "locale", Value: "en"}, {Key: "strength", Value: 1}},
		{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}},
		{{Key: "locale", Value: "fr"}, {Key: "strength", Value: 3}},
		{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}, {Key: "numericOrdering", Value: true}},
	} {
		raw, err := bson.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		c, err := collation.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		colls = append(colls, c)
	}
	for round := 0; round < 20; round++ {
		list := bson.A{}
		for n := 1 + rng.IntN(300); n > 0; n-- {
			list = append(list, value())
		}
		filter, err := bson.Marshal(bson.D{{Key: "a", Value: bson.D{{Key: "$in", Value: list}}}})
		if err != nil {
			t.Fatal(err)
		}
		_, raw, err := bson.MarshalValue(list)
		if err != nil {
			t.Fatal(err)
		}
		listed, _ := bsoncore.Value{Type: bsoncore.TypeArray, Data: raw}.ArrayOK()
		vals, _ := listed.Values()
		for _, coll := range colls {
			f, err := ParseWith(filter, Options{Collation: coll})
			if err != nil {
				t.Fatal(err)
			}
			for probe := 0; probe < 200; probe++ {
				doc, err := bson.Marshal(bson.D{{Key: "a", Value: value()}})
				if err != nil {
					t.Fatal(err)
				}
				a := bsoncore.Document(doc).Lookup("a")
				want := false
				for _, x := range vals {
					want = want || bsonx.EqualWith(x, a, coll)
				}
				if got := f.Match(doc); got != want {
					t.Fatalf("seed %d round %d: %v under %v matched %v, want %v (list %v)", seed, round, a, coll, got, want, list)
				}
			}
		}
	}
}

// BenchmarkCollatedIn: a document's match against an $in of 5,000
// strings under a case-insensitive collation (a binary search in the
// collation's order; before it, 5,000 collated comparisons per document).
func BenchmarkCollatedIn(b *testing.B) {
	raw, _ := bson.Marshal(bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}})
	coll, err := collation.Parse(raw)
	if err != nil {
		b.Fatal(err)
	}
	list := bson.A{}
	for i := 0; i < 5000; i++ {
		list = append(list, fmt.Sprintf("User%06d", i*3))
	}
	filter, _ := bson.Marshal(bson.D{{Key: "name", Value: bson.D{{Key: "$in", Value: list}}}})
	f, err := ParseWith(filter, Options{Collation: coll})
	if err != nil {
		b.Fatal(err)
	}
	docs := make([]bsoncore.Document, 1000)
	for i := range docs {
		docs[i], _ = bson.Marshal(bson.D{{Key: "name", Value: fmt.Sprintf("user%06d", i*7)}})
	}
	b.ResetTimer()
	matched := 0
	for i := 0; i < b.N; i++ {
		if f.Match(docs[i%len(docs)]) {
			matched++
		}
	}
	if b.N >= len(docs) && matched == 0 {
		b.Fatal("no document matched")
	}
}
