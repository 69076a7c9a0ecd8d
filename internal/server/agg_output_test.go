package server_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cairndb/cairn/internal/engine"
)

// outputCase is one $out or $merge run over the wire: the source and
// target collections before, the pipeline, and either the error code or
// the target's documents after (sorted by _id, compared as Extended JSON).
type outputCase struct {
	name      string
	source    []string // documents of "src", Extended JSON
	target    []string // documents of "dst" before the run
	indexes   []string // key patterns of unique indexes created on "dst"
	pipeline  string   // Extended JSON array
	code      int32    // expected error code, 0 for success
	want      []string // "dst" after the run (ignored with code unless keep)
	keep      bool     // with code: also check "dst" (what a failure leaves)
	targetCol string   // the collection to read back ("dst" if empty)
}

var outputCases = []outputCase{
	// $out
	{name: "out creates the target", source: []string{`{"_id": 1, "a": 1}`, `{"_id": 2, "a": 2}`},
		pipeline: `[{"$match": {"a": {"$gt": 1}}}, {"$out": "dst"}]`, want: []string{`{"_id": 2, "a": 2}`}},
	{name: "out replaces the target", source: []string{`{"_id": 1, "a": 1}`}, target: []string{`{"_id": 9, "old": true}`},
		pipeline: `[{"$out": "dst"}]`, want: []string{`{"_id": 1, "a": 1}`}},
	{name: "out object form", source: []string{`{"_id": 1}`},
		pipeline: `[{"$out": {"db": "outdb", "coll": "dst"}}]`, want: []string{`{"_id": 1}`}},
	{name: "out with an empty result leaves an empty target", source: []string{`{"_id": 1}`}, target: []string{`{"_id": 5}`},
		pipeline: `[{"$match": {"x": 1}}, {"$out": "dst"}]`, want: []string{}},
	{name: "out duplicate _id leaves the old target", source: []string{`{"_id": 1, "k": 1}`, `{"_id": 2, "k": 1}`}, target: []string{`{"_id": 7}`},
		pipeline: `[{"$project": {"_id": "$k"}}, {"$out": "dst"}]`, code: 11000, keep: true, want: []string{`{"_id": 7}`}},
	{name: "out keeps the target's unique index", source: []string{`{"_id": 1, "u": 1}`, `{"_id": 2, "u": 1}`}, target: []string{`{"_id": 7, "u": 7}`},
		indexes: []string{`{"u": 1}`}, pipeline: `[{"$out": "dst"}]`, code: 11000, keep: true, want: []string{`{"_id": 7, "u": 7}`}},
	{name: "out to the collection it reads", source: []string{`{"_id": 1, "n": 1}`, `{"_id": 2, "n": 2}`},
		pipeline: `[{"$set": {"n": {"$multiply": ["$n", 10]}}}, {"$out": "src"}]`, targetCol: "src",
		want: []string{`{"_id": 1, "n": 10}`, `{"_id": 2, "n": 20}`}},
	{name: "out to a system collection", pipeline: `[{"$out": "system.x"}]`, code: 17385},
	{name: "out to an internal database", pipeline: `[{"$out": {"db": "admin", "coll": "x"}}]`, code: 31321},
	{name: "out to an invalid namespace", pipeline: `[{"$out": ""}]`, code: 73},
	{name: "out with a number", pipeline: `[{"$out": 1}]`, code: 16990},
	{name: "out with an unknown field", pipeline: `[{"$out": {"db": "a", "coll": "b", "x": 1}}]`, code: 40415},
	{name: "out without db", pipeline: `[{"$out": {"coll": "b"}}]`, code: 40414},
	{name: "out not last", pipeline: `[{"$out": "x"}, {"$match": {}}]`, code: 40601},

	// $merge, default modes (merge / insert on _id)
	{name: "merge inserts and merges", source: []string{`{"_id": 1, "a": 10}`, `{"_id": 2, "a": 20}`}, target: []string{`{"_id": 1, "a": 1, "b": 1}`},
		pipeline: `[{"$merge": "dst"}]`, want: []string{`{"_id": 1, "a": 10, "b": 1}`, `{"_id": 2, "a": 20}`}},
	{name: "merge inserts a new document as an upsert of {$set: doc} does (new fields in name order)", source: []string{`{"_id": 2, "b": 1, "a": 2}`},
		pipeline: `[{"$merge": "dst"}]`, want: []string{`{"_id": 2, "a": 2, "b": 1}`}},
	{name: "merge replace inserts the document as it is", source: []string{`{"_id": 2, "b": 1, "a": 2}`},
		pipeline: `[{"$merge": {"into": "dst", "whenMatched": "replace"}}]`, want: []string{`{"_id": 2, "b": 1, "a": 2}`}},
	{name: "merge creates the target", source: []string{`{"_id": 1}`},
		pipeline: `[{"$merge": {"into": "dst"}}]`, want: []string{`{"_id": 1}`}},
	{name: "merge replace", source: []string{`{"_id": 1, "a": 10}`}, target: []string{`{"_id": 1, "a": 1, "b": 1}`},
		pipeline: `[{"$merge": {"into": "dst", "whenMatched": "replace"}}]`, want: []string{`{"_id": 1, "a": 10}`}},
	{name: "merge keepExisting", source: []string{`{"_id": 1, "a": 10}`, `{"_id": 2, "a": 20}`}, target: []string{`{"_id": 1, "a": 1}`},
		pipeline: `[{"$merge": {"into": "dst", "whenMatched": "keepExisting"}}]`, want: []string{`{"_id": 1, "a": 1}`, `{"_id": 2, "a": 20}`}},
	{name: "merge whenMatched fail is a duplicate key", source: []string{`{"_id": 1, "a": 10}`}, target: []string{`{"_id": 1, "a": 1}`},
		pipeline: `[{"$merge": {"into": "dst", "whenMatched": "fail"}}]`, code: 11000, keep: true, want: []string{`{"_id": 1, "a": 1}`}},
	{name: "merge whenNotMatched discard", source: []string{`{"_id": 1, "a": 10}`, `{"_id": 2, "a": 20}`}, target: []string{`{"_id": 1, "a": 1}`},
		pipeline: `[{"$merge": {"into": "dst", "whenNotMatched": "discard"}}]`, want: []string{`{"_id": 1, "a": 10}`}},
	{name: "merge whenNotMatched fail", source: []string{`{"_id": 2, "a": 20}`}, target: []string{`{"_id": 1, "a": 1}`},
		pipeline: `[{"$merge": {"into": "dst", "whenNotMatched": "fail"}}]`, code: 13113, keep: true, want: []string{`{"_id": 1, "a": 1}`}},
	{name: "merge pipeline with new", source: []string{`{"_id": 1, "n": 5}`, `{"_id": 2, "n": 7}`}, target: []string{`{"_id": 1, "n": 1}`},
		pipeline: `[{"$merge": {"into": "dst", "whenMatched": [{"$set": {"n": {"$add": ["$n", "$$new.n"]}}}]}}]`,
		want:     []string{`{"_id": 1, "n": 6}`, `{"_id": 2, "n": 7}`}},
	{name: "merge pipeline with let", source: []string{`{"_id": 1, "n": 5}`}, target: []string{`{"_id": 1, "n": 1}`},
		pipeline: `[{"$merge": {"into": "dst", "let": {"x": {"$multiply": ["$n", 2]}}, "whenMatched": [{"$set": {"n": "$$x"}}], "whenNotMatched": "discard"}}]`,
		want:     []string{`{"_id": 1, "n": 10}`}},
	{name: "merge pipeline let without new cannot read new", pipeline: `[{"$merge": {"into": "dst", "let": {"x": 1}, "whenMatched": [{"$set": {"n": "$$new"}}], "whenNotMatched": "discard"}}]`, code: 17276},
	{name: "merge on a unique index", source: []string{`{"_id": 10, "k": "a", "v": 2}`, `{"k": "b", "v": 3}`}, target: []string{`{"_id": 1, "k": "a", "v": 1}`},
		indexes: []string{`{"k": 1}`}, pipeline: `[{"$project": {"_id": 0}}, {"$merge": {"into": "dst", "on": "k", "whenNotMatched": "discard"}}]`,
		want: []string{`{"_id": 1, "k": "a", "v": 2}`}},
	{name: "merge on a unique compound index in another order", source: []string{`{"_id": 10, "a": 1, "b": 2, "v": 9}`}, target: []string{`{"_id": 1, "a": 1, "b": 2, "v": 1}`},
		indexes: []string{`{"b": 1, "a": -1}`}, pipeline: `[{"$unset": "_id"}, {"$merge": {"into": "dst", "on": ["a", "b"], "whenMatched": "replace"}}]`,
		want: []string{`{"_id": 1, "a": 1, "b": 2, "v": 9}`}},
	{name: "merge on _id and another field generates a missing _id", source: []string{`{"_id": 1, "a": 5, "v": 1}`}, target: []string{`{"_id": 1, "a": 5, "v": 0}`},
		indexes: []string{`{"_id": 1, "a": 1}`}, pipeline: `[{"$merge": {"into": "dst", "on": ["a", "_id"]}}]`,
		want: []string{`{"_id": 1, "a": 5, "v": 1}`}},
	{name: "merge on without a unique index", source: []string{`{"_id": 1, "k": 1}`}, target: []string{`{"_id": 1, "k": 1}`},
		pipeline: `[{"$merge": {"into": "dst", "on": "k"}}]`, code: 51183},
	{name: "merge on a missing target", source: []string{`{"_id": 1, "k": 1}`},
		pipeline: `[{"$merge": {"into": "dst", "on": "k"}}]`, code: 51183},
	{name: "merge on a field that is missing", source: []string{`{"_id": 1}`}, target: []string{`{"_id": 5, "k": 1}`}, indexes: []string{`{"k": 1}`},
		pipeline: `[{"$merge": {"into": "dst", "on": "k"}}]`, code: 51132},
	{name: "merge on a field that is an array", source: []string{`{"_id": 1, "k": [1]}`}, target: []string{`{"_id": 5, "k": 1}`}, indexes: []string{`{"k": 1}`},
		pipeline: `[{"$merge": {"into": "dst", "on": "k"}}]`, code: 51185},
	{name: "merge changing _id of the matched document", source: []string{`{"_id": 10, "k": 1}`}, target: []string{`{"_id": 5, "k": 1}`}, indexes: []string{`{"k": 1}`},
		pipeline: `[{"$merge": {"into": "dst", "on": "k", "whenMatched": "replace"}}]`, code: 66},
	{name: "merge $set changing _id of the matched document", source: []string{`{"_id": 10, "k": 1, "v": 2}`}, target: []string{`{"_id": 5, "k": 1}`}, indexes: []string{`{"k": 1}`},
		pipeline: `[{"$merge": {"into": "dst", "on": "k"}}]`, code: 66, keep: true, want: []string{`{"_id": 5, "k": 1}`}},
	{name: "merge keeps unique indexes consistent", source: []string{`{"_id": 2, "u": 1}`}, target: []string{`{"_id": 1, "u": 1}`}, indexes: []string{`{"u": 1}`},
		pipeline: `[{"$merge": "dst"}]`, code: 11000, keep: true, want: []string{`{"_id": 1, "u": 1}`}},
	{name: "merge moves index entries of a replaced document", source: []string{`{"_id": 1, "u": 2}`, `{"_id": 2, "u": 1}`}, target: []string{`{"_id": 1, "u": 1}`}, indexes: []string{`{"u": 1}`},
		pipeline: `[{"$merge": {"into": "dst", "whenMatched": "replace"}}]`, want: []string{`{"_id": 1, "u": 2}`, `{"_id": 2, "u": 1}`}},
	{name: "merge into the collection it reads", source: []string{`{"_id": 1, "n": 1}`, `{"_id": 2, "n": 2}`},
		pipeline: `[{"$project": {"_id": {"$add": ["$_id", 10]}, "n": 1}}, {"$merge": "src"}]`, targetCol: "src",
		want: []string{`{"_id": 1, "n": 1}`, `{"_id": 2, "n": 2}`, `{"_id": 11, "n": 1}`, `{"_id": 12, "n": 2}`}},
	{name: "merge unsupported modes", pipeline: `[{"$merge": {"into": "dst", "whenMatched": "keepExisting", "whenNotMatched": "fail"}}]`, code: 51181},
	{name: "merge let without a pipeline", pipeline: `[{"$merge": {"into": "dst", "let": {"x": 1}}}]`, code: 51199},
	{name: "merge let redefining new", pipeline: `[{"$merge": {"into": "dst", "let": {"new": 1}, "whenMatched": [{"$set": {"a": 1}}]}}]`, code: 51273},
	{name: "merge pipeline with a disallowed stage", pipeline: `[{"$merge": {"into": "dst", "whenMatched": [{"$match": {}}]}}]`, code: 72},
	{name: "merge bad whenMatched", pipeline: `[{"$merge": {"into": "dst", "whenMatched": "pipeline"}}]`, code: 2},
	{name: "merge bad on", pipeline: `[{"$merge": {"into": "dst", "on": []}}]`, code: 51187},
	{name: "merge duplicate on", pipeline: `[{"$merge": {"into": "dst", "on": ["a", "a"]}}]`, code: 31465},
	{name: "merge into a number", pipeline: `[{"$merge": {"into": 1}}]`, code: 51178},
	{name: "merge without into", pipeline: `[{"$merge": {"on": "_id"}}]`, code: 40414},
	{name: "merge to a system collection", pipeline: `[{"$merge": "system.x"}]`, code: 31319},
	{name: "merge to an internal database", pipeline: `[{"$merge": {"into": {"db": "local", "coll": "x"}}}]`, code: 31320},
	{name: "merge in a lookup", pipeline: `[{"$lookup": {"from": "x", "as": "y", "pipeline": [{"$merge": "z"}]}}]`, code: 51047},
}

func TestOutAndMergeOverTheWire(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	for i, tc := range outputCases {
		t.Run(tc.name, func(t *testing.T) {
			db := c.Database(fmt.Sprintf("out%d", i))
			defer db.Drop(ctx)
			defer c.Database("outdb").Drop(ctx)
			mustInsertJSON(t, db.Collection("src"), tc.source)
			for _, k := range tc.indexes {
				_, err := db.Collection("dst").Indexes().CreateOne(ctx, mongo.IndexModel{Keys: mustJSON(t, k), Options: options.Index().SetUnique(true)})
				if err != nil {
					t.Fatal(err)
				}
			}
			mustInsertJSON(t, db.Collection("dst"), tc.target)
			var pipeline bson.A
			if err := bson.UnmarshalExtJSON([]byte(tc.pipeline), false, &pipeline); err != nil {
				t.Fatal(err)
			}
			var reply bson.Raw
			err := db.RunCommand(ctx, bson.D{{Key: "aggregate", Value: "src"}, {Key: "pipeline", Value: pipeline}, {Key: "cursor", Value: bson.D{}}}).Decode(&reply)
			if tc.code != 0 {
				var ce mongo.CommandError
				if !errors.As(err, &ce) || ce.Code != tc.code {
					t.Fatalf("got %v, want code %d", err, tc.code)
				}
				if !tc.keep {
					return
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if batch, _ := reply.Lookup("cursor", "firstBatch").Array().Values(); len(batch) != 0 {
					t.Errorf("firstBatch = %v, want empty", batch)
				}
			}
			target := db.Collection("dst")
			if tc.targetCol != "" {
				target = db.Collection(tc.targetCol)
			}
			if strings.Contains(tc.pipeline, `"outdb"`) {
				target = c.Database("outdb").Collection("dst")
			}
			for _, coll := range []string{"src", "dst"} {
				if err := s.env.Engine.CheckIndexes(engine.Namespace{DB: db.Name(), Coll: coll}); err != nil {
					t.Errorf("indexes of %s: %v", coll, err)
				}
			}
			got := readSortedJSON(t, target)
			want := make([]string, len(tc.want))
			for i, w := range tc.want {
				want[i] = canonicalJSON(t, w)
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("target:\n got %v\nwant %v", got, want)
			}
		})
	}
}

// TestOutKeepsIndexesAndOptions checks $out carries the target's indexes
// and collection options over to the replaced collection.
func TestOutKeepsIndexesAndOptions(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	db := c.Database("outidx")
	if err := db.RunCommand(ctx, bson.D{{Key: "create", Value: "dst"}, {Key: "idGenerator", Value: "sequential"}}).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("dst").Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}, Options: options.Index().SetName("a_1").SetUnique(true)}); err != nil {
		t.Fatal(err)
	}
	mustInsertJSON(t, db.Collection("src"), []string{`{"_id": 1, "a": 1}`, `{"_id": 2, "a": 2}`})
	if _, err := db.Collection("src").Aggregate(ctx, bson.A{bson.D{{Key: "$out", Value: "dst"}}}); err != nil {
		t.Fatal(err)
	}
	specs, err := db.Collection("dst").Indexes().ListSpecifications(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, sp := range specs {
		names = append(names, sp.Name)
		if sp.Name == "a_1" && (sp.Unique == nil || !*sp.Unique) {
			t.Errorf("a_1 lost unique: %+v", sp)
		}
	}
	if strings.Join(names, ",") != "_id_,a_1" {
		t.Errorf("indexes after $out = %v, want _id_,a_1", names)
	}
	colls, err := db.ListCollectionSpecifications(ctx, bson.D{{Key: "name", Value: "dst"}})
	if err != nil || len(colls) != 1 {
		t.Fatalf("listCollections: %v %v", colls, err)
	}
	if v, ok := colls[0].Options.Lookup("idGenerator").StringValueOK(); !ok || v != "sequential" {
		t.Errorf("options after $out = %s, want idGenerator sequential", colls[0].Options)
	}
	names, err = db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.HasPrefix(n, "tmp.agg_out.") {
			t.Errorf("temporary collection %s left behind", n)
		}
	}
	// The unique index still holds after the replacement.
	if _, err := db.Collection("dst").InsertOne(ctx, bson.D{{Key: "a", Value: 1}}); !mongo.IsDuplicateKeyError(err) {
		t.Errorf("insert of a duplicate a after $out: %v, want a duplicate key error", err)
	}
}

func mustJSON(t *testing.T, s string) bson.D {
	t.Helper()
	var d bson.D
	if err := bson.UnmarshalExtJSON([]byte(s), false, &d); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return d
}

func mustInsertJSON(t *testing.T, coll *mongo.Collection, docs []string) {
	t.Helper()
	if len(docs) == 0 {
		return
	}
	var all []any
	for _, d := range docs {
		all = append(all, mustJSON(t, d))
	}
	if _, err := coll.InsertMany(context.Background(), all); err != nil {
		t.Fatal(err)
	}
}

// canonicalJSON renders a document as relaxed Extended JSON.
func canonicalJSON(t *testing.T, s string) string {
	t.Helper()
	b, err := bson.Marshal(mustJSON(t, s))
	if err != nil {
		t.Fatal(err)
	}
	return bson.Raw(b).String()
}

func readSortedJSON(t *testing.T, coll *mongo.Collection) []string {
	t.Helper()
	cur, err := coll.Find(context.Background(), bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for cur.Next(context.Background()) {
		out = append(out, cur.Current.String())
	}
	if err := cur.Err(); err != nil {
		t.Fatal(err)
	}
	if out == nil {
		out = []string{}
	}
	return out
}

// TestOutFromDocuments writes a collection-less pipeline's documents.
func TestOutFromDocuments(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	db := c.Database("outdocs")
	pipeline := bson.A{
		bson.D{{Key: "$documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}}}},
		bson.D{{Key: "$merge", Value: "dst"}},
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "aggregate", Value: 1}, {Key: "pipeline", Value: pipeline}, {Key: "cursor", Value: bson.D{}}}).Err(); err != nil {
		t.Fatal(err)
	}
	pipeline[1] = bson.D{{Key: "$out", Value: "dst2"}}
	if err := db.RunCommand(ctx, bson.D{{Key: "aggregate", Value: 1}, {Key: "pipeline", Value: pipeline}, {Key: "cursor", Value: bson.D{}}}).Err(); err != nil {
		t.Fatal(err)
	}
	for _, coll := range []string{"dst", "dst2"} {
		if got := readSortedJSON(t, db.Collection(coll)); len(got) != 2 {
			t.Errorf("%s holds %v, want 2 documents", coll, got)
		}
	}
}
