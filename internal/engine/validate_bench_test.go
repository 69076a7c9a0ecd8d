package engine

import (
	"log/slog"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// BenchmarkInsertValidated measures what a validator adds to an insert
// batch of 100 valid documents: none, a query validator, a $jsonSchema.
// SyncInterval keeps fsync out of the measurement.
func BenchmarkInsertValidated(b *testing.B) {
	for _, bc := range []struct {
		name    string
		options bson.D
	}{
		{"none", nil},
		{"query", bson.D{{Key: "validator", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$gte", Value: 0}}}, {Key: "s", Value: bson.D{{Key: "$type", Value: "string"}}}}}}},
		{"jsonSchema", bson.D{{Key: "validator", Value: bson.D{{Key: "$jsonSchema", Value: bson.D{
			{Key: "required", Value: bson.A{"a", "s"}},
			{Key: "properties", Value: bson.D{
				{Key: "a", Value: bson.D{{Key: "bsonType", Value: "int"}, {Key: "minimum", Value: 0}}},
				{Key: "s", Value: bson.D{{Key: "bsonType", Value: "string"}, {Key: "maxLength", Value: 20}}}}}}}}}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e, err := Open(b.TempDir(), Options{Logger: slog.New(slog.DiscardHandler), SyncInterval: 1 << 30})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			ns := Namespace{"bench", "c"}
			var opts bson.Raw
			if bc.options != nil {
				opts, _ = bson.Marshal(bc.options)
			}
			if err := e.CreateCollection(ns, opts); err != nil {
				b.Fatal(err)
			}
			batch := make([]bsoncore.Document, 100)
			id := 0
			for b.Loop() {
				for i := range batch {
					id++
					batch[i], _ = bson.Marshal(bson.D{{Key: "_id", Value: id}, {Key: "a", Value: int32(i)}, {Key: "s", Value: "some text"}})
				}
				res, err := e.Insert(ns, batch, true)
				if err != nil || len(res.WriteErrors) > 0 {
					b.Fatal(err, res.WriteErrors)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/doc")
		})
	}
}
