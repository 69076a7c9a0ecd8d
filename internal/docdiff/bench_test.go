package docdiff

import (
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// BenchmarkAppendDiffYCSB is the oplog diff of a YCSB update: a document
// of _id and field0…field9 of 100 characters, one field $set to another
// value of the same length, the field turning from one op to the next
// (cairn bench's updates choose it at random).
func BenchmarkAppendDiffYCSB(b *testing.B) {
	base := bson.D{{Key: "_id", Value: "user6284781860667377211"}}
	for f := range 10 {
		base = append(base, bson.E{Key: fmt.Sprintf("field%d", f), Value: strings.Repeat(string(rune('a'+f)), 100)})
	}
	old, _ := bson.Marshal(base)
	news := make([][]byte, 10)
	for f := range news {
		d := append(bson.D(nil), base...)
		d[1+f].Value = strings.Repeat("z", 100)
		news[f], _ = bson.Marshal(d)
	}
	var dst []byte
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		var ok bool
		if dst, ok = AppendDiff(dst[:0], old, news[i%len(news)]); !ok {
			b.Fatal("no diff")
		}
		i++
	}
}
