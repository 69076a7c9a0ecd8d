package engine

import (
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// BenchmarkPrepareInsertYCSB is an insert's checks of one YCSB record (a
// string _id first and ten fields of 100 characters): the walk of its
// top-level fields, its depth and its _id key. One goroutine, nothing else
// running, so that its instruction count under callgrind is exact.
func BenchmarkPrepareInsertYCSB(b *testing.B) {
	d := bson.D{{Key: "_id", Value: "user12345678901234567890"}}
	for f := range 10 {
		d = append(d, bson.E{Key: fmt.Sprintf("field%d", f), Value: strings.Repeat("x", 100)})
	}
	doc, _ := bson.Marshal(d)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := prepareInsert(doc, nil); err != nil {
			b.Fatal(err)
		}
	}
}
