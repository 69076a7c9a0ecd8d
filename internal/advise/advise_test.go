package advise

import (
	"fmt"
	"github.com/cairndb/cairn/internal/bsonx/bsonxtest"
	"math/rand/v2"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func uuid(rng *rand.Rand) string {
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", rng.Uint32(), rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint64()&0xffffffffffff)
}

func index(t testing.TB, name string, key bson.D, unique bool, ops int64) Index {
	return Index{Name: name, Key: raw(t, key), Unique: unique, Ops: ops, UsageKnown: true}
}

// want is one finding a model must produce.
type want struct {
	kind       string
	path       string // substring of Finding.Path
	severity   Severity
	suggestion string // substring of Finding.Suggestion
}

// models are the design documents' "before" models (and a clean one);
// each must yield exactly the problems its team found (invariant
// "Evidence with every finding"): every want, and no other finding above
// Info. Shard-key candidates are Info: advice, not a problem.
var models = []struct {
	name  string
	input func(t testing.TB, rng *rand.Rand) Input
	want  []want
}{
	{"juju services: tenant id glued into string _ids", func(t testing.TB, rng *rand.Rand) Input {
		model := uuid(rng)
		var docs []bsoncore.Document
		for i := range 300 {
			name := fmt.Sprintf("wordpress/%d", i)
			id := model + ":" + name
			if i%50 == 7 {
				name = fmt.Sprintf("mysql/%d", i) // renamed; the _id was not
			}
			docs = append(docs, raw(t, bson.D{{Key: "_id", Value: id}, {Key: "model-uuid", Value: model}, {Key: "name", Value: name}, {Key: "life", Value: i % 3}}))
		}
		return Input{NS: "juju.units", Sample: docs}
	}, []want{{"duplicatedIdentity", "_id", High, "compound _id"}}},

	{"shippr fleets: nodes keyed by generated ids, copied into nodeIdentifiers", func(t testing.TB, rng *rand.Rand) Input {
		var docs []bsoncore.Document
		for i := range 120 {
			nodes := bson.D{}
			var ids bson.A
			for range 2 + rng.IntN(6) {
				id := uuid(rng)
				nodes = append(nodes, bson.E{Key: id, Value: bson.D{{Key: "status", Value: "up"}, {Key: "region", Value: "eu"}}})
				ids = append(ids, id)
			}
			if i == 5 {
				ids = ids[1:] // one copy already drifted
			}
			docs = append(docs, raw(t, bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "name", Value: fmt.Sprintf("fleet-%d", i)},
				{Key: "nodes", Value: nodes}, {Key: "nodeIdentifiers", Value: ids}}))
		}
		return Input{NS: "shippr.fleets", Sample: docs}
	}, []want{
		{"dynamicFieldNames", "nodes", High, `"nodes.id"`},
		{"duplicatedKeysArray", "nodeIdentifiers", High, "drop nodeIdentifiers"},
	}},

	{"versions as documents (schema 1)", func(t testing.TB, rng *rand.Rand) Input {
		var docs []bsoncore.Document
		for d := range 60 {
			for v := 1; v <= 5; v++ {
				docs = append(docs, raw(t, bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "docId", Value: d}, {Key: "version", Value: v}, {Key: "attr1", Value: rng.IntN(10)}}))
			}
		}
		return Input{NS: "app.docs", Sample: docs, Shapes: []Shape{
			{Command: "find", Equality: []string{"docId"}, Sort: []string{"version"}, Runs: 500, Examined: 500 * 300, Returned: 500, Plan: "COLLSCAN"},
		}}
	}, []want{
		{"versionPerDocument", "docId", Medium, "versioning: {enabled: true}"},
		{"unindexedQuery", "docId", Medium, `{"docId": 1, "version": 1}`},
	}},

	{"yorkie documents: low-cardinality project key, a unique index that blocks sharding", func(t testing.TB, rng *rand.Rand) Input {
		var docs []bsoncore.Document
		projects := []string{"p-main", "p-main", "p-main", "p-demo", "p-test"}
		for i := range 1000 {
			docs = append(docs, raw(t, bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "project_id", Value: projects[rng.IntN(len(projects))]},
				{Key: "key", Value: fmt.Sprintf("doc-%d", i)}, {Key: "owner", Value: fmt.Sprintf("u%d", rng.IntN(900))}}))
		}
		return Input{NS: "yorkie.documents", Sample: docs,
			Indexes: []Index{index(t, "_id_", bson.D{{Key: "_id", Value: 1}}, true, 10), index(t, "key_1", bson.D{{Key: "key", Value: 1}}, true, 900)},
			Shapes: []Shape{
				{Command: "find", Equality: []string{"project_id", "key"}, Runs: 900, Examined: 900, Returned: 900, Plan: "IXSCAN { key: 1 }"},
				{Command: "find", Equality: []string{"project_id"}, Runs: 100, Examined: 100, Returned: 100, Plan: "IXSCAN { key: 1 }"},
			}}
	}, []want{
		{"shardKeyCandidate", `{"project_id": 1}`, Info, "Do not shard"},
		{"shardKeyCandidate", `{"project_id": 1, "key": 1}`, Info, "unique indexes key_1"},
		{"uniqueBlocksSharding", "key_1", Medium, "shard key's fields first"},
	}},

	{"orders: nested arrays updated by position, an unbounded event log", func(t testing.TB, rng *rand.Rand) Input {
		var docs []bsoncore.Document
		for i := range 50 {
			var events bson.A
			for e := range 10 + i*i {
				events = append(events, bson.D{{Key: "at", Value: e}})
			}
			docs = append(docs, raw(t, bson.D{{Key: "_id", Value: i}, {Key: "orders", Value: bson.A{
				bson.D{{Key: "no", Value: 1}, {Key: "items", Value: bson.A{bson.D{{Key: "sku", Value: "a"}, {Key: "qty", Value: 1}}}}},
			}}, {Key: "events", Value: events}}))
		}
		return Input{NS: "shop.customers", Sample: docs, Shapes: []Shape{
			{Command: "update", Equality: []string{"_id"}, Runs: 10, Examined: 10, Returned: 10, Plan: "IDHACK", ArrayPositions: []string{"orders.items"}},
		}}
	}, []want{
		{"nestedArrays", "orders.items", Medium, "arrayFilters"},
		{"unboundedArray", "events", Medium, "collection of their own"},
	}},

	{"indexes: one unused, one a prefix of another", func(t testing.TB, rng *rand.Rand) Input {
		var docs []bsoncore.Document
		for i := range 50 {
			docs = append(docs, raw(t, bson.D{{Key: "_id", Value: i}, {Key: "a", Value: i % 7}, {Key: "b", Value: i}, {Key: "c", Value: "x"}}))
		}
		return Input{NS: "t.c", Sample: docs, Indexes: []Index{
			index(t, "_id_", bson.D{{Key: "_id", Value: 1}}, true, 5),
			index(t, "a_1", bson.D{{Key: "a", Value: 1}}, false, 40),
			index(t, "a_1_b_1", bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 1}}, false, 40),
			index(t, "c_1", bson.D{{Key: "c", Value: 1}}, false, 0),
		}}
	}, []want{
		{"unusedIndex", "c_1", Low, `dropIndex("c_1")`},
		{"redundantIndex", "a_1", Low, `dropIndex("a_1")`},
	}},

	{"clean model", func(t testing.TB, rng *rand.Rand) Input {
		var docs []bsoncore.Document
		for i := range 500 {
			docs = append(docs, raw(t, bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "env", Value: fmt.Sprintf("e%d", i%40)},
				{Key: "email", Value: fmt.Sprintf("u%d@x.org", i)}, {Key: "tags", Value: bson.A{"a", "b"}},
				{Key: "profile", Value: bson.D{{Key: "name", Value: "n"}, {Key: "age", Value: 30 + i%40}}}}))
		}
		return Input{NS: "app.users", Sample: docs,
			Indexes: []Index{index(t, "_id_", bson.D{{Key: "_id", Value: 1}}, true, 5), index(t, "email_1", bson.D{{Key: "email", Value: 1}}, true, 1000)},
			Shapes:  []Shape{{Command: "find", Equality: []string{"email"}, Runs: 1000, Examined: 1000, Returned: 1000, Plan: "IXSCAN { email: 1 }"}}}
	}, nil},
}

func TestModels(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	for _, m := range models {
		t.Run(m.name, func(t *testing.T) {
			in := m.input(t, rand.New(rand.NewPCG(seed, 3)))
			got := Analyze(in, Options{})
			matched := make([]bool, len(got))
			for _, w := range m.want {
				found := false
				for i, f := range got {
					if f.Kind == w.kind && strings.Contains(f.Path, w.path) {
						found, matched[i] = true, true
						if f.Severity != w.severity {
							t.Errorf("%s %s: severity %v, want %v", w.kind, f.Path, f.Severity, w.severity)
						}
						if !strings.Contains(f.Suggestion, w.suggestion) {
							t.Errorf("%s %s: suggestion %q lacks %q", w.kind, f.Path, f.Suggestion, w.suggestion)
						}
						if f.Summary == "" || len(f.Evidence) == 0 {
							t.Errorf("%s %s: no summary or evidence", w.kind, f.Path)
						}
					}
				}
				if !found {
					t.Errorf("no %s finding on %q; got:\n%s", w.kind, w.path, dump(got))
				}
			}
			for i, f := range got {
				if !matched[i] && f.Severity > Info {
					t.Errorf("unexpected finding %s on %q (%v): %s", f.Kind, f.Path, f.Severity, f.Summary)
				}
			}
		})
	}
}

func dump(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "  %-20s %-6v %-30s %s\n", f.Kind, f.Severity, f.Path, f.Summary)
	}
	return b.String()
}

func TestLooksLikeID(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"3f2a9c1e-4b5d-4e6f-8a9b-0c1d2e3f4a5b", true},
		{"65a1b2c3d4e5f60718293a4b", true},
		{"12345", true},
		{"node-3f2a9c1e", true},
		{"status", false},
		{"createdAt", false},
		{"v2", false},
		{"address", false},
	} {
		if got := looksLikeID(tc.name); got != tc.want {
			t.Errorf("looksLikeID(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func raw(t testing.TB, v any) bsoncore.Document { t.Helper(); return bsonxtest.Marshal(t, v) }
