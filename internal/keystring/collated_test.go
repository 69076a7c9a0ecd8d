package keystring_test

import (
	"bytes"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/bsonx/bsonxtest"
	"github.com/cairndb/cairn/internal/collation"
	"github.com/cairndb/cairn/internal/keystring"
)

// TestCollatedOrder is invariant "Collated keys order as the collation":
// for random pairs of values of every type (strings inside documents and
// arrays included) and several collations, the collated encodings compare
// as bsonx.CompareWith under that collation, ascending and descending.
func TestCollatedOrder(t *testing.T) {
	g := bsonxtest.New(newRand(t))
	for _, spec := range []bson.D{
		{{Key: "locale", Value: "en"}},
		{{Key: "locale", Value: "en"}, {Key: "strength", Value: 1}},
		{{Key: "locale", Value: "fr"}, {Key: "strength", Value: 2}, {Key: "backwards", Value: true}},
		{{Key: "locale", Value: "en"}, {Key: "numericOrdering", Value: true}, {Key: "caseFirst", Value: "upper"}},
		{{Key: "locale", Value: "en"}, {Key: "alternate", Value: "shifted"}},
	} {
		raw, _ := bson.Marshal(spec)
		c, err := collation.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		for range *pairsFlag / 5 {
			a, b := g.Pair()
			want := bsonx.CompareWith(a, b, c)
			got := bytes.Compare(keystring.AppendCollated(nil, a, c), keystring.AppendCollated(nil, b, c))
			if got != want {
				t.Fatalf("%v: CompareWith(%s, %s) = %d, collated keys compare %d", spec, a, b, want, got)
			}
			if desc := bytes.Compare(keystring.AppendDescCollated(nil, a, c), keystring.AppendDescCollated(nil, b, c)); desc != -want {
				t.Fatalf("%v: descending keys of %s, %s compare %d, want %d", spec, a, b, desc, -want)
			}
		}
	}
}
