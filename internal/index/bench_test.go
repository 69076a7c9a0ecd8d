package index_test

import (
	"fmt"
	"testing"

	"github.com/cairndb/cairn/internal/index"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// benchDoc is a document of about 1 KiB shaped like application data:
// scalars, a nested address, a few tags, a compound _id.
func benchDoc() bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().
		AppendDocument("_id", bsoncore.NewDocumentBuilder().AppendString("tenant", "acme").AppendString("env", "prod").AppendInt64("seq", 123456789).Build()).
		AppendString("name", "Ada Lovelace").
		AppendString("email", "ada@example.com").
		AppendInt32("age", 36).
		AppendDouble("score", 97.5).
		AppendBoolean("active", true).
		AppendDateTime("created", 1700000000000).
		AppendDocument("address", bsoncore.NewDocumentBuilder().
			AppendString("street", "12 St James's Square").AppendString("city", "London").
			AppendString("zip", "SW1Y 4JH").AppendString("country", "UK").Build()).
		AppendArray("tags", bsoncore.NewArrayBuilder().AppendString("math").AppendString("poetry").AppendString("engines").Build())
	for i := 0; b != nil && i < 16; i++ {
		b.AppendString(fmt.Sprintf("field%02d", i), "some forty-odd bytes of filler text here..")
	}
	return b.Build()
}

func BenchmarkKeys(b *testing.B) {
	doc := benchDoc()
	arr := bsoncore.NewArrayBuilder()
	for i := range 100 {
		arr.AppendInt32(int32(i * 7 % 100))
	}
	arrDoc := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).AppendArray("values", arr.Build()).Build()
	objs := bsoncore.NewArrayBuilder()
	for i := range 100 {
		objs.AppendDocument(bsoncore.NewDocumentBuilder().AppendInt32("id", int32(i)).AppendString("kind", "k").Build())
	}
	objDoc := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).AppendArray("nodes", objs.Build()).Build()
	for _, bc := range []struct {
		name, spec string
		doc        bsoncore.Document
	}{
		{"compound3-1KiB", `{"key": {"address.city": 1, "age": -1, "email": 1}, "name": "x"}`, doc},
		{"single-1KiB", `{"key": {"email": 1}, "name": "x"}`, doc},
		{"numbers2-1KiB", `{"key": {"age": 1, "score": -1}, "name": "x"}`, doc},
		{"hashed-_id.env-1KiB", `{"key": {"_id.env": "hashed"}, "name": "x"}`, doc},
		{"partial-1KiB", `{"key": {"email": 1}, "name": "x", "partialFilterExpression": {"active": true}}`, doc},
		{"multikey-100", `{"key": {"values": 1}, "name": "x"}`, arrDoc},
		{"multikey-100-compound", `{"key": {"nodes.id": 1, "nodes.kind": 1}, "name": "x"}`, objDoc},
		{"wildcard-1KiB", `{"key": {"$**": 1}, "name": "x"}`, doc},
		{"wildcard-subtree-1KiB", `{"key": {"address.$**": 1}, "name": "x"}`, doc},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := mustSpec(b, bc.spec)
			keys, _, err := s.Keys(bc.doc, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(bc.doc)))
			b.ReportAllocs()
			for b.Loop() {
				keys, _, _ = s.Keys(bc.doc, keys)
			}
			b.ReportMetric(float64(len(keys)), "keys/op")
		})
	}
}

// BenchmarkKeysAndTypeBits is BenchmarkKeys for what the engine calls on
// every write since index entries carry type bits.
func BenchmarkKeysAndTypeBits(b *testing.B) {
	doc := benchDoc()
	for _, bc := range []struct{ name, spec string }{
		{"compound3-1KiB", `{"key": {"address.city": 1, "age": -1, "email": 1}, "name": "x"}`},
		{"single-1KiB", `{"key": {"email": 1}, "name": "x"}`},
		{"numbers2-1KiB", `{"key": {"age": 1, "score": -1}, "name": "x"}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := mustSpec(b, bc.spec)
			keys, tb, _, err := s.KeysAndTypeBits(doc, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				keys, tb, _, _ = s.KeysAndTypeBits(doc, keys, tb)
			}
		})
	}
}

func BenchmarkHash(b *testing.B) {
	v := bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, "tenant-000042")}
	b.ReportAllocs()
	for b.Loop() {
		_ = index.Hash(v)
	}
}

func BenchmarkParseSpec(b *testing.B) {
	spec, err := parseJSONDoc(`{"key": {"a": 1, "b.c": -1}, "name": "ab", "unique": true, "partialFilterExpression": {"a": {"$gt": 5}}}`)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := index.ParseSpec(spec); err != nil {
			b.Fatal(err)
		}
	}
}
