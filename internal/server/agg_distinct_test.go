package server_test

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestAggregateDistinctScan drives the latest-version pipeline over the
// wire: with an index on {docId: 1, v: -1}, $sort then $group of $first
// reads one index entry per docId (DISTINCT_SCAN), and returns each
// docId's highest version; reversed, its lowest. Once docId has held an
// array the index is multikey and the plan is an ordinary IXSCAN.
func TestAggregateDistinctScan(t *testing.T) {
	ctx := context.Background()
	db := startServer(t).client(t).Database("distinct")
	coll := db.Collection("versions")
	const groups, versions = 40, 5
	var docs []any
	for v := range versions {
		for d := range groups {
			docs = append(docs, bson.D{{Key: "docId", Value: d}, {Key: "v", Value: v}, {Key: "tags", Value: bson.A{v, d}}})
		}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if _, err := db.RunCommand(ctx, bson.D{{Key: "createIndexes", Value: "versions"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "docId", Value: 1}, {Key: "v", Value: -1}}}, {Key: "name", Value: "docId_v"}},
	}}}).Raw(); err != nil {
		t.Fatal(err)
	}
	latest := func(dir int) bson.A {
		return bson.A{
			bson.D{{Key: "$sort", Value: bson.D{{Key: "docId", Value: dir}, {Key: "v", Value: -dir}}}},
			bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$docId"}, {Key: "doc", Value: bson.D{{Key: "$first", Value: "$$ROOT"}}}}}},
		}
	}
	for _, tc := range []struct {
		dir       int
		direction string
		wantV     int32
	}{{1, "forward", versions - 1}, {-1, "backward", 0}} {
		ex := explainCmd(t, db, bson.D{{Key: "aggregate", Value: "versions"}, {Key: "pipeline", Value: latest(tc.dir)}, {Key: "cursor", Value: bson.D{}}}, "executionStats")
		vals, err := ex.Lookup("stages").Array().Values()
		if err != nil || len(vals) != 2 {
			t.Fatalf("explain stages: %s", ex)
		}
		cursor := vals[0].Document().Lookup("$cursor").Document()
		if got := stageNames(cursor.Lookup("queryPlanner", "winningPlan").Document()); !sameStages(got, "FETCH", "DISTINCT_SCAN") {
			t.Fatalf("dir %d: plan %v, want FETCH, DISTINCT_SCAN: %s", tc.dir, got, cursor)
		}
		scan := cursor.Lookup("executionStats", "executionStages", "inputStage").Document()
		if k := asInt(scan.Lookup("keysExamined")); k != groups {
			t.Errorf("dir %d: keysExamined %d, want %d (one per docId)", tc.dir, k, groups)
		}
		if d := scan.Lookup("direction").StringValue(); d != tc.direction || scan.Lookup("indexName").StringValue() != "docId_v" {
			t.Errorf("dir %d: scan %s", tc.dir, scan)
		}
		if n := asInt(cursor.Lookup("executionStats", "totalDocsExamined")); n != groups {
			t.Errorf("dir %d: totalDocsExamined %d, want %d", tc.dir, n, groups)
		}
		cur, err := coll.Aggregate(ctx, latest(tc.dir))
		if err != nil {
			t.Fatal(err)
		}
		var out []struct {
			ID  int32 `bson:"_id"`
			Doc struct {
				DocID int32 `bson:"docId"`
				V     int32 `bson:"v"`
			} `bson:"doc"`
		}
		if err := cur.All(ctx, &out); err != nil {
			t.Fatal(err)
		}
		if len(out) != groups {
			t.Fatalf("dir %d: %d groups, want %d", tc.dir, len(out), groups)
		}
		for _, g := range out {
			if g.Doc.DocID != g.ID || g.Doc.V != tc.wantV {
				t.Errorf("dir %d: group %+v, want version %d", tc.dir, g, tc.wantV)
			}
		}
	}

	// A docId that is an array makes the index multikey: no distinct scan.
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "docId", Value: bson.A{1, 2}}, {Key: "v", Value: 9}}); err != nil {
		t.Fatal(err)
	}
	ex := explainCmd(t, db, bson.D{{Key: "aggregate", Value: "versions"}, {Key: "pipeline", Value: latest(1)}, {Key: "cursor", Value: bson.D{}}}, "queryPlanner")
	vals, _ := ex.Lookup("stages").Array().Values()
	plan := vals[0].Document().Lookup("$cursor", "queryPlanner", "winningPlan").Document()
	for _, s := range stageNames(plan) {
		if s == "DISTINCT_SCAN" {
			t.Fatalf("distinct scan of a multikey index: %s", plan)
		}
	}
}
