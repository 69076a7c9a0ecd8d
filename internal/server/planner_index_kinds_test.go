package server_test

import (
	"context"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/index"
)

// hashOf is the key a hashed index holds for v, as explain prints it.
func hashOf(v any) string {
	t, data, err := bson.MarshalValue(v)
	if err != nil {
		panic(fmt.Sprintf("hashOf: %v", err))
	}
	h := index.Hash(bsoncore.Value{Type: bsoncore.Type(t), Data: data})
	return fmt.Sprintf("[%d, %d]", h, h)
}

// TestPlannerHashedIndexes checks that equality and $in on a hashed field,
// including one inside a compound _id, scan the hashed index with point
// bounds on the hashes, and that FETCH applies the filter again.
func TestPlannerHashedIndexes(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	db := c.Database("hx")
	envs := []string{"prod", "test", "dev", "stage"}
	docs := make([]any, 80)
	for i := range docs {
		id := bson.D{{Key: "tenant", Value: i % 5}, {Key: "env", Value: envs[i%4]}, {Key: "n", Value: i}}
		// x: 2 and 2.5 share a hash (numbers hash as their int64 part).
		docs[i] = bson.D{{Key: "_id", Value: id}, {Key: "x", Value: []any{2, 2.5, 3, "s"}[i%4]}, {Key: "y", Value: i % 3}}
	}
	if _, err := db.Collection("h").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	createIndex(t, db, "h", bson.D{{Key: "key", Value: bson.D{{Key: "_id.env", Value: "hashed"}}}, {Key: "name", Value: "_id.env_hashed"}})
	createIndex(t, db, "h", bson.D{{Key: "key", Value: bson.D{{Key: "x", Value: "hashed"}}}, {Key: "name", Value: "x_hashed"}})
	createIndex(t, db, "h", bson.D{{Key: "key", Value: bson.D{{Key: "y", Value: 1}, {Key: "x", Value: "hashed"}}}, {Key: "name", Value: "y_1_x_hashed"}})
	find := func(filter bson.D, more ...bson.E) bson.D {
		return append(bson.D{{Key: "find", Value: "h"}, {Key: "filter", Value: filter}}, more...)
	}

	plan, ex := winning(t, db, find(bson.D{{Key: "_id.env", Value: "prod"}}))
	ix := findStage(plan, "IXSCAN")
	if ix == nil || ix.Lookup("indexName").StringValue() != "_id.env_hashed" || stageNames(plan)[0] != "FETCH" {
		t.Fatalf("_id.env = prod planned as %s", plan)
	}
	if got := ix.Lookup("indexBounds", "_id.env").String(); got != `["`+hashOf("prod")+`"]` {
		t.Errorf("bounds %s, want the hash of \"prod\" %s", got, hashOf("prod"))
	}
	if f, ok := findStage(plan, "FETCH").Lookup("filter").DocumentOK(); !ok || f.String() == "{}" {
		t.Errorf("FETCH does not apply the filter again: %s", plan)
	}
	if n, k, d := execStats(ex); n != 20 || k != 20 || d != 20 {
		t.Errorf("_id.env = prod: nReturned %d, keys %d, docs %d; want 20 each", n, k, d)
	}

	// $in: one point per value, in hash order.
	_, ex = winning(t, db, find(bson.D{{Key: "_id.env", Value: bson.D{{Key: "$in", Value: bson.A{"dev", "prod", "nope"}}}}}))
	if n, k, _ := execStats(ex); n != 40 || k != 40 {
		t.Errorf("$in: nReturned %d, keys %d; want 40, 40", n, k)
	}
	bounds, _ := findStage(ex.Lookup("queryPlanner", "winningPlan").Document(), "IXSCAN").Lookup("indexBounds", "_id.env").Array().Values()
	if len(bounds) != 3 {
		t.Errorf("$in of 3 values: bounds %v", bounds)
	}

	// A collision: 2 and 2.5 share a key; FETCH drops the 2.5s.
	_, ex = winning(t, db, find(bson.D{{Key: "x", Value: 2}}))
	if n, k, d := execStats(ex); n != 20 || k != 40 || d != 40 {
		t.Errorf("x = 2: nReturned %d, keys %d, docs %d; want 20, 40, 40", n, k, d)
	}

	// Ranges and sorts cannot use a hashed field.
	plan, _ = winning(t, db, find(bson.D{{Key: "_id.env", Value: bson.D{{Key: "$gt", Value: "d"}}}}))
	if plan.Lookup("stage").StringValue() != "COLLSCAN" {
		t.Errorf("a range on a hashed field planned as %s", plan)
	}
	plan, _ = winning(t, db, find(bson.D{{Key: "y", Value: 1}}, bson.E{Key: "sort", Value: bson.D{{Key: "x", Value: 1}}}))
	if findStage(plan, "SORT") == nil {
		t.Errorf("a sort on a hashed field without a SORT stage: %s", plan)
	}

	// Compound: a point on y, then the hash of x.
	plan, ex = winning(t, db, find(bson.D{{Key: "y", Value: 1}, {Key: "x", Value: "s"}}, bson.E{Key: "hint", Value: "y_1_x_hashed"}))
	ix = findStage(plan, "IXSCAN")
	if ix == nil || ix.Lookup("indexBounds", "x").String() != `["`+hashOf("s")+`"]` || ix.Lookup("indexBounds", "y").String() != `["[1, 1]"]` {
		t.Errorf("compound hashed: %s", plan)
	}
	if n, _, _ := execStats(ex); int(n) != countFind(t, db, find(bson.D{{Key: "y", Value: 1}, {Key: "x", Value: "s"}}, bson.E{Key: "hint", Value: bson.D{{Key: "$natural", Value: 1}}})) {
		t.Errorf("compound hashed: %d results, not the collection scan's", n)
	}
	// Never covered: the keys hold hashes, not values.
	plan, _ = winning(t, db, find(bson.D{{Key: "y", Value: 1}, {Key: "x", Value: "s"}}, bson.E{Key: "projection", Value: bson.D{{Key: "x", Value: 1}, {Key: "y", Value: 1}, {Key: "_id", Value: 0}}}, bson.E{Key: "hint", Value: "y_1_x_hashed"}))
	if findStage(plan, "FETCH") == nil {
		t.Errorf("a hashed index plan without FETCH: %s", plan)
	}
}

// TestPlannerWildcardIndexes checks that a wildcard index serves
// equality, $in and ranges on one concrete path with MongoDB's explain
// shape, and is not used where it cannot answer (null, $exists: false,
// document equality, paths its projection leaves out), and gives order only
// as MongoDB's rule allows.
func TestPlannerWildcardIndexes(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	db := c.Database("wx")
	docs := make([]any, 60)
	for i := range docs {
		attrs := bson.D{{Key: "b", Value: i % 6}, {Key: "k" + fmt.Sprint(i%3), Value: "v"}}
		if i%5 == 0 {
			attrs = append(attrs, bson.E{Key: "list", Value: bson.A{i, i + 1}})
		}
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "a", Value: attrs}, {Key: "z", Value: i % 4}}
	}
	if _, err := db.Collection("w").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	createIndex(t, db, "w", bson.D{{Key: "key", Value: bson.D{{Key: "a.$**", Value: 1}}}, {Key: "name", Value: "a.$**_1"}})
	createIndex(t, db, "w", bson.D{{Key: "key", Value: bson.D{{Key: "$**", Value: 1}}}, {Key: "name", Value: "$**_1"}, {Key: "wildcardProjection", Value: bson.D{{Key: "z", Value: 1}}}})
	find := func(filter bson.D, more ...bson.E) bson.D {
		return append(bson.D{{Key: "find", Value: "w"}, {Key: "filter", Value: filter}}, more...)
	}
	scanCount := func(filter bson.D) int {
		return countFind(t, db, find(filter, bson.E{Key: "hint", Value: bson.D{{Key: "$natural", Value: 1}}}))
	}

	plan, ex := winning(t, db, find(bson.D{{Key: "a.b", Value: 1}}))
	ix := findStage(plan, "IXSCAN")
	if ix == nil || ix.Lookup("indexName").StringValue() != "a.$**_1" {
		t.Fatalf("a.b = 1 planned as %s", plan)
	}
	if got := ix.Lookup("keyPattern").String(); got != `{"$_path": {"$numberInt":"1"},"a.b": {"$numberInt":"1"}}` {
		t.Errorf("keyPattern %s", got)
	}
	if got := ix.Lookup("indexBounds").String(); got != `{"$_path": ["[\"a.b\", \"a.b\"]"],"a.b": ["[1, 1]"]}` {
		t.Errorf("indexBounds %s", got)
	}
	if n, k, d := execStats(ex); n != 10 || k != 10 || d != 10 {
		t.Errorf("a.b = 1: nReturned %d, keys %d, docs %d; want 10 each", n, k, d)
	}
	// Multikey per path: a.b never held an array, a.list did.
	if ix.Lookup("isMultiKey").Boolean() || ix.Lookup("multiKeyPaths").String() != `{"$_path": [],"a.b": []}` {
		t.Errorf("a.b: isMultiKey %s, multiKeyPaths %s", ix.Lookup("isMultiKey"), ix.Lookup("multiKeyPaths"))
	}
	plan, _ = winning(t, db, find(bson.D{{Key: "a.list", Value: 5}}))
	if ix := findStage(plan, "IXSCAN"); ix == nil || !ix.Lookup("isMultiKey").Boolean() || ix.Lookup("multiKeyPaths").String() != `{"$_path": [],"a.list": ["a.list"]}` {
		t.Errorf("a.list: %s", plan)
	}

	// A range, an $in, and a path under an array (multikey).
	for _, f := range []bson.D{
		{{Key: "a.b", Value: bson.D{{Key: "$gte", Value: 4}}}},
		{{Key: "a.k1", Value: bson.D{{Key: "$in", Value: bson.A{"v", "w"}}}}},
		{{Key: "a.list", Value: bson.D{{Key: "$gt", Value: 50}}}},
		{{Key: "z", Value: 3}},
	} {
		plan, ex := winning(t, db, find(f))
		if findStage(plan, "IXSCAN") == nil {
			t.Errorf("%v planned as %s", f, plan)
		}
		if n, _, _ := execStats(ex); int(n) != scanCount(f) {
			t.Errorf("%v: %d results, the collection scan finds %d", f, n, scanCount(f))
		}
	}

	// Not served: null and missing fields, document equality, sorts, and
	// paths the projection leaves out.
	for _, f := range []bson.D{
		{{Key: "a.b", Value: nil}},
		{{Key: "a.b", Value: bson.D{{Key: "$exists", Value: false}}}},
		{{Key: "a", Value: bson.D{{Key: "b", Value: 1}}}},
		{{Key: "_id", Value: bson.D{{Key: "$gt", Value: 100}}}, {Key: "q", Value: 1}},
	} {
		plan, _ := winning(t, db, find(f))
		if ix := findStage(plan, "IXSCAN"); ix != nil && ix.Lookup("indexName").StringValue() != "_id_" {
			t.Errorf("%v used a wildcard index: %s", f, plan)
		}
	}
	// Sorts: only on the one path the scan serves, when it never held an
	// array (MongoDB's rule).
	for _, tc := range []struct {
		filter, sort bson.D
		ordered      bool
	}{
		{bson.D{{Key: "a.b", Value: bson.D{{Key: "$gt", Value: 1}}}}, bson.D{{Key: "a.b", Value: -1}}, true},
		{bson.D{{Key: "a.b", Value: bson.D{{Key: "$gt", Value: 1}}}}, bson.D{{Key: "z", Value: 1}}, false},
		{bson.D{{Key: "a.b", Value: bson.D{{Key: "$gt", Value: 1}}}}, bson.D{{Key: "a.b", Value: 1}, {Key: "z", Value: 1}}, false},
		{bson.D{{Key: "a.list", Value: bson.D{{Key: "$gt", Value: 1}}}}, bson.D{{Key: "a.list", Value: 1}}, false},
	} {
		plan, ex := winning(t, db, find(tc.filter, bson.E{Key: "sort", Value: tc.sort}))
		if findStage(plan, "IXSCAN") == nil || (findStage(plan, "SORT") == nil) != tc.ordered {
			t.Errorf("%v sorted by %v (ordered by the index: %t): %s", tc.filter, tc.sort, tc.ordered, plan)
		}
		if n, _, _ := execStats(ex); int(n) != scanCount(tc.filter) {
			t.Errorf("%v sorted by %v: %d results, the collection scan finds %d", tc.filter, tc.sort, n, scanCount(tc.filter))
		}
	}
}

// TestPlannerMultiKeyPaths checks that explain shows which paths of an
// index are multikey, and that bounds on the other paths intersect and
// compound as on an index without arrays.
func TestPlannerMultiKeyPaths(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	db := c.Database("mkp")
	docs := make([]any, 50)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "a", Value: bson.A{i % 5, i%5 + 10}}, {Key: "b", Value: i}, {Key: "x", Value: bson.D{{Key: "y", Value: bson.A{i % 3}}, {Key: "z", Value: i % 4}}}}
	}
	if _, err := db.Collection("m").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	createIndex(t, db, "m", bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 1}}}, {Key: "name", Value: "a_1_b_1"}})
	createIndex(t, db, "m", bson.D{{Key: "key", Value: bson.D{{Key: "x.y", Value: 1}, {Key: "x.z", Value: 1}}}, {Key: "name", Value: "xy_xz"}})
	find := func(filter bson.D) bson.D { return bson.D{{Key: "find", Value: "m"}, {Key: "filter", Value: filter}} }

	filter := bson.D{{Key: "a", Value: 2}, {Key: "b", Value: bson.D{{Key: "$gt", Value: 10}, {Key: "$lt", Value: 30}}}}
	plan, ex := winning(t, db, find(filter))
	ix := findStage(plan, "IXSCAN")
	if ix == nil || !ix.Lookup("isMultiKey").Boolean() {
		t.Fatalf("planned as %s", plan)
	}
	if got := ix.Lookup("multiKeyPaths").String(); got != `{"a": ["a"],"b": []}` {
		t.Errorf("multiKeyPaths %s", got)
	}
	if got := ix.Lookup("indexBounds", "b").String(); got != `["(10, 30)"]` {
		t.Errorf("b's bounds %s: a field without arrays intersects its conditions", got)
	}
	if n, k, _ := execStats(ex); n != 4 || k != 4 {
		t.Errorf("nReturned %d, keys %d; want 4, 4", n, k)
	}

	// A point on the multikey field, sorted by the other: the index gives
	// the order (each document sits once under a=2); sorted by a, it
	// cannot.
	sorted := append(find(bson.D{{Key: "a", Value: 2}}), bson.E{Key: "sort", Value: bson.D{{Key: "b", Value: -1}}})
	if plan, _ := winning(t, db, sorted); findStage(plan, "SORT") != nil || findStage(plan, "IXSCAN") == nil {
		t.Errorf("a = 2 sorted by b: %s", plan)
	}
	sorted = append(find(bson.D{{Key: "a", Value: bson.D{{Key: "$gte", Value: 2}}}}), bson.E{Key: "sort", Value: bson.D{{Key: "a", Value: 1}}})
	if plan, _ := winning(t, db, sorted); findStage(plan, "SORT") == nil {
		t.Errorf("sorted by the multikey field a without a SORT stage: %s", plan)
	}

	plan, ex = winning(t, db, find(bson.D{{Key: "x.y", Value: 1}, {Key: "x.z", Value: 3}}))
	ix = findStage(plan, "IXSCAN")
	if ix == nil || ix.Lookup("multiKeyPaths").String() != `{"x.y": ["x.y"],"x.z": []}` || ix.Lookup("indexBounds").String() != `{"x.y": ["[1, 1]"],"x.z": ["[3, 3]"]}` {
		t.Errorf("x.y, x.z (x holds no array): %s", plan)
	}
	if n, k, _ := execStats(ex); n != 4 || k != 4 {
		t.Errorf("nReturned %d, keys %d; want 4, 4", n, k)
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
