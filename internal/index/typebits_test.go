package index_test

import (
	"bytes"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/index"
)

// TestKeyTypeBits checks that a key and its type bits give back the
// document's values exactly (types, and missing fields), and that documents
// with several keys get no type bits.
func TestKeyTypeBits(t *testing.T) {
	cases := []struct {
		key, doc bson.D
		want     bson.D // the values DecodeKeyTyped gives, by field; nil: no type bits
	}{
		{bson.D{{"a", 1}}, bson.D{{"a", int64(5)}}, bson.D{{"a", int64(5)}}},
		{bson.D{{"a", 1}}, bson.D{{"a", 5.0}}, bson.D{{"a", 5.0}}},
		{bson.D{{"a", -1}}, bson.D{{"a", bson.NewDecimal128(0x3040000000000000, 500)}}, bson.D{{"a", bson.NewDecimal128(0x3040000000000000, 500)}}},
		{bson.D{{"a", 1}, {"b.c", 1}}, bson.D{{"b", bson.D{{"c", bson.Symbol("s")}}}}, bson.D{{"b.c", bson.Symbol("s")}}},
		{bson.D{{"a", 1}, {"b", 1}}, bson.D{{"a", bson.Null{}}, {"b", bson.D{{"x", 2.0}}}}, bson.D{{"a", bson.Null{}}, {"b", bson.D{{"x", 2.0}}}}},
		{bson.D{{"a.0", 1}}, bson.D{{"a", bson.A{int64(7)}}}, bson.D{{"a.0", int64(7)}}},
		{bson.D{{"a", 1}}, bson.D{{"a", bson.A{1, 2}}}, nil},
	}
	for _, c := range cases {
		spec, err := index.ParseSpec(mustMarshal(t, bson.D{{"key", c.key}, {"name", "x"}}))
		if err != nil {
			t.Fatal(err)
		}
		keys, tb, _, err := spec.KeysAndTypeBits(mustMarshal(t, c.doc), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.want == nil {
			if tb != nil {
				t.Errorf("%v over %v: type bits %x for several keys", c.key, c.doc, tb)
			}
			continue
		}
		if len(keys) != 1 || tb == nil {
			t.Fatalf("%v over %v: %d keys, type bits %x", c.key, c.doc, len(keys), tb)
		}
		vals, _, err := spec.DecodeKeyTyped(keys[0], tb)
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range spec.KeyPattern {
			var want bsoncore.Value
			for _, e := range c.want {
				if e.Key == f.Path {
					tp, data, err := bson.MarshalValue(e.Value)
					if err != nil {
						t.Fatal(err)
					}
					want = bsoncore.Value{Type: bsoncore.Type(tp), Data: data}
				}
			}
			if vals[i].Type != want.Type || !bytes.Equal(vals[i].Data, want.Data) {
				t.Errorf("%v over %v: field %s decodes as %v, want %v", c.key, c.doc, f.Path, vals[i], want)
			}
		}
	}
}

func mustMarshal(t *testing.T, d bson.D) bsoncore.Document {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
