package commands

import (
	"context"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/exec"
)

// TestPlanCache checks that the winner of a trial is reused for the same
// query shape, and never once the collection's indexes change.
func TestPlanCache(t *testing.T) {
	env, run1 := commandRunner(t, "pc")
	run := func(cmd bson.D) bson.Raw {
		r := bson.Raw(run1(cmd))
		if ok, _ := r.Lookup("ok").AsFloat64OK(); ok != 1 {
			t.Fatalf("%v: %s", cmd, r)
		}
		return r
	}
	index := func(coll string, key bson.D, name string) {
		run(bson.D{{Key: "createIndexes", Value: coll}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: key}, {Key: "name", Value: name}}}}})
	}
	docs := bson.A{}
	for i := range 500 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "a", Value: i % 50}, {Key: "b", Value: i % 7}})
	}
	run(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}})
	index("c", bson.D{{Key: "a", Value: 1}}, "a_1")
	index("c", bson.D{{Key: "b", Value: 1}}, "b_1")
	cache := env.Exec.PlanCache()

	// plan runs {a: x, b: y} and reports the indexes used, whether the plan
	// came from the cache, and how many documents it returned.
	plan := func(coll string, a, b int) (string, bool, int) {
		filter, _ := bson.Marshal(bson.D{{Key: "a", Value: a}, {Key: "b", Value: b}})
		sp, err := newSelection(engine.Namespace{DB: "pc", Coll: coll}, bsoncore.Document(filter))
		if err != nil {
			t.Fatal(err)
		}
		ex, err := env.Exec.Open(context.Background(), sp, exec.Run)
		if err != nil {
			t.Fatal(err)
		}
		defer ex.Close()
		n := 0
		for {
			d, err := ex.Next()
			if err != nil {
				t.Fatal(err)
			}
			if d == nil {
				break
			}
			if !sp.Filter.Match(d) {
				t.Fatalf("wrong document %s for a=%d b=%d", d, a, b)
			}
			n++
		}
		return strings.Join(ex.IndexesUsed(), ","), ex.FromCache(), n
	}
	want := func(what, gotIx string, gotCached bool, gotN int, ix string, cached bool, n int) {
		t.Helper()
		if gotIx != ix || gotCached != cached || gotN != n {
			t.Errorf("%s: index %q cached %v n %d; want %q %v %d", what, gotIx, gotCached, gotN, ix, cached, n)
		}
	}

	ix, cached, n := plan("c", 3, 3)
	want("first run", ix, cached, n, "a_1", false, 2)
	ix, cached, n = plan("c", 10, 3) // same shape, other values
	want("same shape", ix, cached, n, "a_1", true, 2)
	if cache.Len() != 1 {
		t.Errorf("cache holds %d plans, want 1", cache.Len())
	}

	// A new index: the cached plan is not used; the new index competes.
	index("c", bson.D{{Key: "b", Value: 1}, {Key: "a", Value: 1}}, "b_1_a_1")
	ix, cached, n = plan("c", 3, 3)
	want("after createIndexes", ix, cached, n, "b_1_a_1", false, 2)
	ix, cached, _ = plan("c", 4, 4)
	want("cached again", ix, cached, 2, "b_1_a_1", true, 2)

	// Dropping the winner: a fresh trial among what is left.
	run(bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: "b_1_a_1"}})
	ix, cached, n = plan("c", 3, 3)
	want("after dropIndexes", ix, cached, n, "a_1", false, 2)

	// A document that makes an index multikey changes what its bounds
	// mean: the entry is not reused.
	run(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1000}, {Key: "a", Value: bson.A{3, 4}}, {Key: "b", Value: 3}}}}})
	ix, cached, n = plan("c", 3, 3)
	want("after multikey", ix, cached, n, "a_1", false, 3)

	// planCacheClear forgets the collection's plans.
	run(bson.D{{Key: "planCacheClear", Value: "c"}})
	if cache.Len() != 0 {
		t.Errorf("after planCacheClear the cache holds %d plans", cache.Len())
	}

	// planCacheClear with query forgets that shape only: not another
	// filter's shape, not the same filter under a sort or a collation.
	plan("c", 3, 3)
	for _, other := range []bson.D{
		{{Key: "query", Value: bson.D{{Key: "a", Value: 1}}}},
		{{Key: "query", Value: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 2}}}, {Key: "sort", Value: bson.D{{Key: "a", Value: 1}}}},
		{{Key: "query", Value: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 2}}}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "fr"}}}},
	} {
		run(append(bson.D{{Key: "planCacheClear", Value: "c"}}, other...))
		if cache.Len() != 1 {
			t.Errorf("planCacheClear %v dropped another shape's plan", other)
		}
	}
	run(bson.D{{Key: "planCacheClear", Value: "c"}, {Key: "query", Value: bson.D{{Key: "a", Value: 40}, {Key: "b", Value: 0}}}})
	if cache.Len() != 0 {
		t.Errorf("planCacheClear of the cached shape left %d plans", cache.Len())
	}
	ix, cached, _ = plan("c", 3, 3)
	want("after clearing its shape", ix, cached, 2, "a_1", false, 2)

	// Rename, and a new collection under the old name with other indexes:
	// neither reuses a plan made for the other.
	plan("c", 3, 3)
	run(bson.D{{Key: "renameCollection", Value: "pc.c"}, {Key: "to", Value: "pc.d"}, {Key: "$db", Value: "admin"}})
	ix, cached, n = plan("d", 3, 3)
	want("renamed", ix, cached, n, "a_1", false, 3)
	run(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}})
	index("c", bson.D{{Key: "b", Value: 1}}, "b_1")
	index("c", bson.D{{Key: "b", Value: -1}}, "b_-1")
	ix, cached, n = plan("c", 3, 3)
	if cached || n != 2 || !strings.HasPrefix(ix, "b_") {
		t.Errorf("recreated collection: index %q cached %v n %d", ix, cached, n)
	}
}
