package engine

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// BenchmarkInsert measures the engine's insert path (prepare, the commit
// pipeline, the tail bound, one secondary index) in batches of 1 and 100
// documents per request, acknowledged without waiting for a sync so the
// figure is CPU rather than fsync. Run it with and without -tags
// invariants to see what the runtime checks cost and that the normal
// build pays nothing for them.
func BenchmarkInsert(b *testing.B) {
	pad := strings.Repeat("x", 100)
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			e, err := Open(b.TempDir(), Options{Logger: slog.New(slog.DiscardHandler), SyncInterval: time.Second})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			ns := Namespace{"bench", "insert"}
			ix, _ := bson.Marshal(bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}})
			if _, err := e.CreateIndexes(context.Background(), ns, []bsoncore.Document{ix}); err != nil {
				b.Fatal(err)
			}
			docs := make([]bsoncore.Document, batch)
			id := 0
			b.ReportAllocs()
			for b.Loop() {
				for i := range docs {
					id++
					docs[i], _ = bson.Marshal(bson.D{{Key: "_id", Value: id}, {Key: "a", Value: id % 100}, {Key: "pad", Value: pad}})
				}
				if _, err := e.Insert(ns, docs, true); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(id), "ns/doc")
		})
	}
}
