package server_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestLookupIndexMatchesScan is differential: $lookup through an index on
// foreignField must join exactly as the in-memory match without one,
// including null and missing local values, arrays on either side, and
// numbers of different types.
func TestLookupIndexMatchesScan(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	local := []string{
		`{"_id": 1, "k": 1}`, `{"_id": 2, "k": 2.0}`, `{"_id": 3}`, `{"_id": 4, "k": null}`,
		`{"_id": 5, "k": [1, 3]}`, `{"_id": 6, "k": "x"}`, `{"_id": 7, "k": {"a": 1}}`,
		`{"_id": 8, "k": [[1, 2]]}`, `{"_id": 9, "k": {"$regularExpression": {"pattern": "^x", "options": ""}}}`,
		`{"_id": 10, "k": {"$numberLong": "3"}}`,
	}
	foreign := []string{
		`{"_id": 100, "f": 1}`, `{"_id": 101, "f": [2, 3]}`, `{"_id": 102}`, `{"_id": 103, "f": null}`,
		`{"_id": 104, "f": "x"}`, `{"_id": 105, "f": {"a": 1}}`, `{"_id": 106, "f": [1, 2]}`, `{"_id": 107, "f": 1.0}`,
		`{"_id": 108, "f": "xy"}`,
	}
	pipelines := []string{
		`[{"$lookup": {"from": "foreign", "localField": "k", "foreignField": "f", "as": "j"}}]`,
		`[{"$lookup": {"from": "foreign", "localField": "k", "foreignField": "f", "as": "j", "pipeline": [{"$project": {"_id": 1}}]}}]`,
	}
	run := func(db *mongo.Database, p string) []string {
		var pipeline bson.A
		if err := bson.UnmarshalExtJSON([]byte(p), false, &pipeline); err != nil {
			t.Fatal(err)
		}
		cur, err := db.Collection("local").Aggregate(ctx, pipeline)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for cur.Next(ctx) {
			var d struct {
				ID any      `bson:"_id"`
				J  []bson.M `bson:"j"`
			}
			if err := cur.Decode(&d); err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, m := range d.J {
				ids = append(ids, fmt.Sprint(m["_id"]))
			}
			sort.Strings(ids)
			out = append(out, fmt.Sprintf("%v: %s", d.ID, strings.Join(ids, ",")))
		}
		if err := cur.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	plain, indexed := c.Database("lookupplain"), c.Database("lookupindexed")
	for _, db := range []*mongo.Database{plain, indexed} {
		defer db.Drop(ctx)
		mustInsertJSON(t, db.Collection("local"), local)
		mustInsertJSON(t, db.Collection("foreign"), foreign)
	}
	if _, err := indexed.Collection("foreign").Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "f", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	for _, p := range pipelines {
		want, got := run(plain, p), run(indexed, p)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s\nwith index:\n%s\nwithout:\n%s", p, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if len(want) != len(local) || !strings.Contains(strings.Join(want, "\n"), "1: 100,106,107") {
			t.Errorf("%s: unexpected join %v", p, want)
		}
	}
}
