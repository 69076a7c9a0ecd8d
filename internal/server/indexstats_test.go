package server_test

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestIndexStatsAndCollStats checks $indexStats access counts, collStats'
// index sizes and $collStats' sections.
func TestIndexStatsAndCollStats(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	db := c.Database("st")
	coll := db.Collection("c")
	loadNumbered(t, coll, 500, 50)
	if _, err := coll.Indexes().CreateMany(ctx, []mongo.IndexModel{{Keys: bson.D{{Key: "k", Value: 1}}}, {Keys: bson.D{{Key: "s", Value: -1}}}}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if n, err := coll.CountDocuments(ctx, bson.D{{Key: "k", Value: 5}}); err != nil || n != 10 {
			t.Fatalf("count k=5: %d %v", n, err)
		}
	}
	stats := indexStats(t, coll)
	if len(stats) != 3 {
		t.Fatalf("$indexStats has %d documents, want 3", len(stats))
	}
	k := stats["k_1"]
	if ops := k.Lookup("accesses", "ops").Int64(); ops != 3 {
		t.Errorf("k_1 accesses.ops = %d, want 3", ops)
	}
	if ops := stats["s_-1"].Lookup("accesses", "ops").Int64(); ops != 0 {
		t.Errorf("s_-1 accesses.ops = %d, want 0", ops)
	}
	if _, ok := k.Lookup("accesses", "since").DateTimeOK(); !ok {
		t.Errorf("accesses.since is not a date: %s", k)
	}
	if k.Lookup("key").String() != `{"k": {"$numberInt":"1"}}` || k.Lookup("spec", "name").StringValue() != "k_1" || k.Lookup("host").StringValue() == "" {
		t.Errorf("$indexStats k_1 = %s", k)
	}
	if stats["_id_"].Lookup("spec", "key", "_id").Int32() != 1 {
		t.Errorf("$indexStats _id_ = %s", stats["_id_"])
	}

	var st bson.Raw
	if err := db.RunCommand(ctx, bson.D{{Key: "collStats", Value: "c"}}).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if st.Lookup("nindexes").Int32() != 3 || st.Lookup("count").AsInt64() != 500 {
		t.Errorf("collStats = %s", st)
	}
	sizes, _ := st.Lookup("indexSizes").Document().Elements()
	var sum int64
	for _, e := range sizes {
		n := e.Value().AsInt64()
		if n <= 0 {
			t.Errorf("indexSizes.%s = %d, want > 0", e.Key(), n)
		}
		sum += n
	}
	if len(sizes) != 3 || st.Lookup("totalIndexSize").AsInt64() != sum {
		t.Errorf("indexSizes %s do not add up to totalIndexSize %s", st.Lookup("indexSizes"), st.Lookup("totalIndexSize"))
	}
	if st.Lookup("totalSize").AsInt64() != st.Lookup("storageSize").AsInt64()+sum {
		t.Errorf("totalSize %d != storageSize + totalIndexSize", st.Lookup("totalSize").AsInt64())
	}
	// A scale divides every size.
	var scaled bson.Raw
	if err := db.RunCommand(ctx, bson.D{{Key: "collStats", Value: "c"}, {Key: "scale", Value: 1024}}).Decode(&scaled); err != nil {
		t.Fatal(err)
	}
	if got, want := scaled.Lookup("indexSizes", "k_1").AsInt64(), st.Lookup("indexSizes", "k_1").AsInt64()/1024; got != want {
		t.Errorf("scaled indexSizes.k_1 = %d, want %d", got, want)
	}

	cur, err := coll.Aggregate(ctx, mongo.Pipeline{{{Key: "$collStats", Value: bson.D{
		{Key: "latencyStats", Value: bson.D{{Key: "histograms", Value: true}}},
		{Key: "storageStats", Value: bson.D{}},
		{Key: "count", Value: bson.D{}},
		{Key: "queryExecStats", Value: bson.D{}},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	var out []bson.Raw
	if err := cur.All(ctx, &out); err != nil || len(out) != 1 {
		t.Fatalf("$collStats: %d documents, %v", len(out), err)
	}
	cs := out[0]
	if cs.Lookup("ns").StringValue() != "st.c" || cs.Lookup("count").AsInt64() != 500 ||
		cs.Lookup("storageStats", "nindexes").Int32() != 3 ||
		cs.Lookup("storageStats", "indexSizes", "k_1").AsInt64() != st.Lookup("indexSizes", "k_1").AsInt64() {
		t.Errorf("$collStats = %s", cs)
	}
	if _, ok := cs.Lookup("latencyStats", "reads", "histogram").ArrayOK(); !ok {
		t.Errorf("$collStats latencyStats = %s", cs.Lookup("latencyStats"))
	}
	if _, ok := cs.Lookup("localTime").DateTimeOK(); !ok {
		t.Errorf("$collStats localTime = %s", cs.Lookup("localTime"))
	}
}

// TestReportingStageErrors: MongoDB's codes for misplaced or malformed
// $collStats, $indexStats and $currentOp.
func TestReportingStageErrors(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	if _, err := c.Database("st").Collection("c").InsertOne(ctx, bson.D{{Key: "a", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		db, coll string // coll "" is {aggregate: 1}
		pipeline bson.A
		code     int32
	}{
		{"collStats not first", "st", "c", bson.A{bson.D{{Key: "$match", Value: bson.D{}}}, bson.D{{Key: "$collStats", Value: bson.D{}}}}, 40602},
		{"collStats not an object", "st", "c", bson.A{bson.D{{Key: "$collStats", Value: 1}}}, 5447000},
		{"collStats unknown field", "st", "c", bson.A{bson.D{{Key: "$collStats", Value: bson.D{{Key: "nope", Value: bson.D{}}}}}}, 40415},
		{"collStats of a missing collection", "st", "missing", bson.A{bson.D{{Key: "$collStats", Value: bson.D{{Key: "storageStats", Value: bson.D{}}}}}}, 26},
		{"indexStats not empty", "st", "c", bson.A{bson.D{{Key: "$indexStats", Value: bson.D{{Key: "a", Value: 1}}}}}, 28803},
		{"indexStats not first", "st", "c", bson.A{bson.D{{Key: "$match", Value: bson.D{}}}, bson.D{{Key: "$indexStats", Value: bson.D{}}}}, 40602},
		{"currentOp outside admin", "st", "", bson.A{bson.D{{Key: "$currentOp", Value: bson.D{}}}}, 73},
		{"currentOp on a collection", "admin", "c", bson.A{bson.D{{Key: "$currentOp", Value: bson.D{}}}}, 73},
		{"currentOp not first", "admin", "", bson.A{bson.D{{Key: "$match", Value: bson.D{}}}, bson.D{{Key: "$currentOp", Value: bson.D{}}}}, 40602},
		{"currentOp bad option", "admin", "", bson.A{bson.D{{Key: "$currentOp", Value: bson.D{{Key: "allUsers", Value: 1}}}}}, 9},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var target any = tc.coll
			if tc.coll == "" {
				target = 1
			}
			err := c.Database(tc.db).RunCommand(ctx, bson.D{{Key: "aggregate", Value: target}, {Key: "pipeline", Value: tc.pipeline}, {Key: "cursor", Value: bson.D{}}}).Err()
			var ce mongo.CommandError
			if !errors.As(err, &ce) || ce.Code != tc.code {
				t.Fatalf("got %v, want code %d", err, tc.code)
			}
		})
	}
	// A missing collection has no indexes to report, and no error.
	if got := indexStats(t, c.Database("st").Collection("missing")); len(got) != 0 {
		t.Errorf("$indexStats of a missing collection = %v", got)
	}
}

// TestIndexManagementAsMongoDB covers the index rules issue 6 names:
// MongoDB's default names, CannotIndexParallelArrays (171) on insert and
// on a build, and dropIndexes by name, key, list of names and "*".
func TestIndexManagementAsMongoDB(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	coll := c.Database("im").Collection("c")
	names, err := coll.Indexes().CreateMany(ctx, []mongo.IndexModel{
		{Keys: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: -1}}},
		{Keys: bson.D{{Key: "x.y", Value: 1}}},
		{Keys: bson.D{{Key: "h", Value: "hashed"}}},
		{Keys: bson.D{{Key: "c", Value: 1}}},
		{Keys: bson.D{{Key: "d", Value: -1}}},
		{Keys: bson.D{{Key: "$**", Value: 1}}},
	})
	want := []string{"a_1_b_-1", "x.y_1", "h_hashed", "c_1", "d_-1", "$**_1"}
	if err != nil || len(names) != len(want) {
		t.Fatalf("createIndexes: %v %v", names, err)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Errorf("index %d named %q, want %q", i, names[i], want[i])
		}
	}
	// Two arrays in one compound key.
	_, err = coll.InsertOne(ctx, bson.D{{Key: "a", Value: bson.A{1, 2}}, {Key: "b", Value: bson.A{3, 4}}})
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 171 {
		t.Fatalf("parallel arrays: %v, want 171", err)
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{}); n != 0 {
		t.Fatalf("the refused document was stored")
	}
	// A build over a document with parallel arrays fails the same way and
	// leaves nothing.
	other := c.Database("im").Collection("par")
	if _, err := other.InsertMany(ctx, []any{bson.D{{Key: "p", Value: 1}}, bson.D{{Key: "p", Value: bson.A{1, 2}}, {Key: "q", Value: bson.A{3, 4}}}}); err != nil {
		t.Fatal(err)
	}
	_, err = other.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "p", Value: 1}, {Key: "q", Value: 1}}})
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 171 || ce.Name != "CannotIndexParallelArrays" {
		t.Fatalf("build over parallel arrays: %v, want 171 CannotIndexParallelArrays", err)
	}
	if specs, _ := other.Indexes().ListSpecifications(ctx); len(specs) != 1 {
		t.Fatalf("a failed build left %d indexes", len(specs))
	}

	drop := func(index any) (int32, error) {
		var res bson.Raw
		err := c.Database("im").RunCommand(ctx, bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: index}}).Decode(&res)
		was, _ := res.Lookup("nIndexesWas").Int32OK()
		return was, err
	}
	listed := func() []string {
		specs, err := coll.Indexes().ListSpecifications(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range specs {
			out = append(out, s.Name)
		}
		return out
	}
	if was, err := drop(bson.D{{Key: "a", Value: 1}, {Key: "b", Value: -1}}); err != nil || was != 7 {
		t.Fatalf("drop by key: %d %v", was, err)
	}
	if was, err := drop("x.y_1"); err != nil || was != 6 {
		t.Fatalf("drop by name: %d %v", was, err)
	}
	if was, err := drop(bson.A{"c_1", "d_-1"}); err != nil || was != 5 {
		t.Fatalf("drop a list of names: %d %v", was, err)
	}
	if got := listed(); len(got) != 3 || got[1] != "h_hashed" || got[2] != "$**_1" {
		t.Fatalf("after the drops listIndexes has %v", got)
	}
	if _, err := drop("nope_1"); !errors.As(err, &ce) || ce.Code != 27 {
		t.Fatalf("drop an unknown name: %v, want 27 IndexNotFound", err)
	}
	if _, err := drop(bson.D{{Key: "zz", Value: 1}}); !errors.As(err, &ce) || ce.Code != 27 {
		t.Fatalf("drop an unknown key: %v, want 27 IndexNotFound", err)
	}
	if was, err := drop("*"); err != nil || was != 3 {
		t.Fatalf("drop *: %d %v", was, err)
	}
	if got := listed(); len(got) != 1 || got[0] != "_id_" {
		t.Fatalf("after drop * listIndexes has %v", got)
	}
}

// TestIndexStatsCountsQueries checks that $indexStats counts one access per
// executed query for each index of the winning plan only: not per key
// range, not for plans a trial rejected, not for explain, and _id_ for
// _id lookups and _id ranges.
func TestIndexStatsCountsQueries(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	db := c.Database("ixs")
	coll := db.Collection("c")
	loadNumbered(t, coll, 200, 20)
	createIndex(t, db, "c", bson.D{{Key: "key", Value: bson.D{{Key: "k", Value: 1}}}, {Key: "name", Value: "k_1"}})
	createIndex(t, db, "c", bson.D{{Key: "key", Value: bson.D{{Key: "k", Value: 1}, {Key: "s", Value: 1}}}, {Key: "name", Value: "k_1_s_1"}})
	createIndex(t, db, "c", bson.D{{Key: "key", Value: bson.D{{Key: "s", Value: 1}}}, {Key: "name", Value: "s_1"}})
	ops := func() map[string]int64 {
		out := map[string]int64{}
		for name, d := range indexStats(t, coll) {
			out[name] = d.Lookup("accesses", "ops").Int64()
		}
		return out
	}
	steps := []struct {
		what string
		cmd  bson.D
		want map[string]int64 // the increase per index
	}{
		// Five point ranges, one query: one access. k_1 and k_1_s_1 both
		// bound k: a trial runs both, only the winner counts.
		{"$in of 5 values", bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "k", Value: bson.D{{Key: "$in", Value: bson.A{1, 2, 3, 4, 5}}}}}}}, nil},
		{"_id lookup", bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 7}}}}, map[string]int64{"_id_": 1}},
		{"_id range", bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "$lt", Value: 5}}}}}}, map[string]int64{"_id_": 1}},
		{"collection scan", bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "z", Value: 1}}}}, map[string]int64{}},
		{"explain", bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "s", Value: "doc 3"}}}}}}, map[string]int64{}},
		{"$or over one index twice", bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "s", Value: "doc 1"}}, bson.D{{Key: "s", Value: "doc 2"}}}}}}}, map[string]int64{"s_1": 1}},
	}
	for _, st := range steps {
		before := ops()
		var ex bson.Raw
		if st.want == nil {
			ex = explainCmd(t, db, st.cmd, "queryPlanner")
		}
		if err := db.RunCommand(context.Background(), st.cmd).Err(); err != nil {
			t.Fatalf("%s: %v", st.what, err)
		}
		after := ops()
		want := st.want
		if want == nil {
			// The winner is whichever index the trial picks.
			name := findStage(ex.Lookup("queryPlanner", "winningPlan").Document(), "IXSCAN").Lookup("indexName").StringValue()
			want = map[string]int64{name: 1}
		}
		for name := range after {
			if d := after[name] - before[name]; d != want[name] {
				t.Errorf("%s: %s accesses grew by %d, want %d", st.what, name, d, want[name])
			}
		}
	}
}
