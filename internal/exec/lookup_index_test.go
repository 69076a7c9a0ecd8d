package exec

import (
	"context"
	"log/slog"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/collation"
	"github.com/cairndb/cairn/internal/engine"
)

// openTestEngine opens an engine in a temporary directory for one test,
// closed when the test ends.
func openTestEngine(t *testing.T) *engine.Engine {
	t.Helper()
	eng, err := engine.Open(t.TempDir(), engine.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}

// TestFindInTakesAnIndexOfTheCollation checks $lookup's index read
// (aggCatalog.FindIn) under collations: a string is looked up through an
// index only when the index's collation is the pipeline's (the planner's
// rule), and what it finds is what the collation calls equal; otherwise
// FindIn declines (ok false) and $lookup reads the collection itself.
func TestFindInTakesAnIndexOfTheCollation(t *testing.T) {
	eng := openTestEngine(t)
	ctx := context.Background()
	for _, coll := range []struct{ name, index string }{
		{"en2", `{"key": {"sku": 1}, "name": "sku_en2", "collation": {"locale": "en", "strength": 2}}`},
		{"simple", `{"key": {"sku": 1}, "name": "sku_1"}`},
	} {
		ns := engine.Namespace{DB: "db", Coll: coll.name}
		var docs []bsoncore.Document
		for i, s := range []string{"almonds", "ALMONDS", "cashews"} {
			docs = append(docs, mustDoc(t, bson.D{{Key: "_id", Value: i}, {Key: "sku", Value: s}}))
		}
		if _, err := eng.Insert(ns, docs, true); err != nil {
			t.Fatal(err)
		}
		var spec bson.Raw
		if err := bson.UnmarshalExtJSON([]byte(coll.index), false, &spec); err != nil {
			t.Fatal(err)
		}
		if _, err := eng.CreateIndexes(ctx, ns, []bsoncore.Document{bsoncore.Document(spec)}); err != nil {
			t.Fatal(err)
		}
	}
	en2, err := collation.Parse(mustDoc(t, bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}}))
	if err != nil {
		t.Fatal(err)
	}
	fr, err := collation.Parse(mustDoc(t, bson.D{{Key: "locale", Value: "fr"}}))
	if err != nil {
		t.Fatal(err)
	}
	str := func(s string) []bsoncore.Value {
		return []bsoncore.Value{{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, s)}}
	}
	cat := aggCatalog{e: New(eng)}
	for _, tc := range []struct {
		name   string
		coll   string
		by     *collation.Collator
		want   int  // documents found
		wantOK bool // read through the index
	}{
		{name: "same collation", coll: "en2", by: en2, want: 2, wantOK: true},
		{name: "simple pipeline, collated index", coll: "en2", wantOK: false},
		{name: "another collation", coll: "en2", by: fr, wantOK: false},
		{name: "collated pipeline, simple index", coll: "simple", by: en2, wantOK: false},
		{name: "simple both", coll: "simple", want: 0, wantOK: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, ok, err := cat.FindIn(ctx, "db", tc.coll, "sku", str("Almonds"), tc.by)
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.wantOK {
				t.Fatalf("read through the index: %v, want %v", ok, tc.wantOK)
			}
			if !ok {
				return
			}
			docs, err := agg.ReadAll(src)
			if err != nil {
				t.Fatal(err)
			}
			if len(docs) != tc.want {
				t.Fatalf("found %d documents, want %d", len(docs), tc.want)
			}
		})
	}
}
