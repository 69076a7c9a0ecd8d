package fts

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// BenchmarkScores is the per-document cost of a text index's keys: one
// short English string of 8 words.
func BenchmarkScores(b *testing.B) {
	l, _ := LookupLanguage("english")
	spec := &Spec{Weights: map[string]float64{"t": 1}, Language: l, Override: "language"}
	doc, _ := bson.Marshal(bson.D{{Key: "t", Value: "The quick brown foxes were running over lazy dogs"}})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := spec.Scores(doc); err != nil {
			b.Fatal(err)
		}
	}
}
