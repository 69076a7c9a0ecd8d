package update_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cairndb/cairn/internal/update"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// doc1KiB is a ~1 KiB document of mixed fields, like a typical record.
func doc1KiB() bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1)
	for i := 0; i < 12; i++ {
		b.AppendString(fmt.Sprintf("field%02d", i), strings.Repeat("v", 40))
		b.AppendInt64(fmt.Sprintf("count%02d", i), int64(i))
	}
	b.AppendDocument("address", bsoncore.NewDocumentBuilder().AppendString("street", "1 Main St").AppendString("city", "Springfield").Build())
	return b.Build()
}

// BenchmarkSet1KiB: $set of one existing field in a ~1 KiB document.
func BenchmarkSet1KiB(b *testing.B) {
	doc := doc1KiB()
	u, err := update.ParseDocument(bsoncore.NewDocumentBuilder().AppendDocument("$set",
		bsoncore.NewDocumentBuilder().AppendInt64("count05", 99).Build()).Build(), update.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, mod, err := u.Apply(doc, update.ApplyContext{ArrayPos: -1}); err != nil || !mod {
			b.Fatal(err)
		}
	}
}

// BenchmarkPush1000: $push of one value to a 1,000-element array.
func BenchmarkPush1000(b *testing.B) {
	arr := bsoncore.NewArrayBuilder()
	for i := 0; i < 1000; i++ {
		arr.AppendInt32(int32(i))
	}
	doc := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).AppendArray("a", arr.Build()).Build()
	u, err := update.ParseDocument(bsoncore.NewDocumentBuilder().AppendDocument("$push",
		bsoncore.NewDocumentBuilder().AppendInt32("a", 1000).Build()).Build(), update.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, mod, err := u.Apply(doc, update.ApplyContext{ArrayPos: -1}); err != nil || !mod {
			b.Fatal(err)
		}
	}
}

// BenchmarkParse: parsing a typical operator update.
func BenchmarkParse(b *testing.B) {
	upd := bsoncore.NewDocumentBuilder().
		AppendDocument("$set", bsoncore.NewDocumentBuilder().AppendString("a.b", "x").AppendInt32("c", 1).Build()).
		AppendDocument("$inc", bsoncore.NewDocumentBuilder().AppendInt32("n", 1).Build()).Build()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := update.ParseDocument(upd, update.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSetYCSB: YCSB's update, a $set of one existing field of a
// record of ten 100-byte string fields (cairn bench's records, ~1.1 KB),
// alternating two values so that every update changes the document.
func BenchmarkSetYCSB(b *testing.B) {
	bd := bsoncore.NewDocumentBuilder().AppendString("_id", "user6284781860667377211")
	for i := range 10 {
		bd.AppendString(fmt.Sprintf("field%d", i), strings.Repeat(string(rune('a'+i)), 100))
	}
	doc := bd.Build()
	var us [2]*update.Update
	for i := range us {
		var err error
		us[i], err = update.ParseDocument(bsoncore.NewDocumentBuilder().AppendDocument("$set",
			bsoncore.NewDocumentBuilder().AppendString("field3", strings.Repeat(string(rune('x'+i)), 100)).Build()).Build(), update.Options{})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, mod, err := us[i&1].Apply(doc, update.ApplyContext{ArrayPos: -1}); err != nil || !mod {
			b.Fatal(err)
		}
		i++
	}
}
