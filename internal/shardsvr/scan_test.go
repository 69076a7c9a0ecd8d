package shardsvr

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/commands"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/shard"
)

// localNode is a Node over an in-process engine (no shard identity): its
// Local runs commands as a client's would.
func localNode(t *testing.T) *Node {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	eng, err := engine.Open(t.TempDir(), engine.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	env := commands.NewEnv(eng, commands.Config{}, log)
	n := New(Options{Log: log, Local: func(ctx context.Context, db string, cmd bsoncore.Document) bsoncore.Document {
		req, err := commands.NewRequest(cmd, db, nil)
		if err != nil {
			t.Fatal(err)
		}
		return commands.Run(ctx, &commands.Session{Env: env, Remote: "internal"}, req, nil)
	}})
	t.Cleanup(func() {
		n.Close()
		env.Close()
		eng.Close()
	})
	return n
}

func doc(t *testing.T, v any) bsoncore.Document {
	t.Helper()
	b, err := bson.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRangeReadsUseTheShardKeyIndex: a range of a shard key is read through
// the shard key's index between the range's bounds — the documents the
// range holds (keyRange.holds over every document), no others, and only
// those examined (explain's totalDocsExamined) — for a plain key, a key
// that is a prefix of its index (the index's further field descending),
// _id, and a hashed key; without an index, by a collection scan with the
// same result.
func TestRangeReadsUseTheShardKeyIndex(t *testing.T) {
	n := localNode(t)
	ctx := context.Background()
	minKey, maxKey := bson.MinKey{}, bson.MaxKey{}
	vals := []any{nil, int32(-5), 0.5, int64(7), 10, 15, 19.99, 20, 25, "a", "z", bson.D{{Key: "x", Value: 1}}, true}
	var docs bson.A
	for i, v := range vals {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: v}, {Key: "x", Value: i % 3}})
	}
	docs = append(docs, bson.D{{Key: "_id", Value: 100}, {Key: "x", Value: 1}}) // no k: null
	for _, tc := range []struct {
		coll    string
		pattern bson.D
		index   bson.D // nil: none
		ranges  [][2]any
	}{
		{"plain", bson.D{{Key: "k", Value: 1}}, bson.D{{Key: "k", Value: 1}},
			[][2]any{{minKey, 10}, {10, 20}, {20, "m"}, {"m", maxKey}, {minKey, maxKey}}},
		{"prefix", bson.D{{Key: "k", Value: 1}}, bson.D{{Key: "k", Value: 1}, {Key: "x", Value: -1}},
			[][2]any{{minKey, 10}, {10, 20}, {20, maxKey}}},
		{"byid", bson.D{{Key: "_id", Value: 1}}, nil, // the _id index
			[][2]any{{minKey, 3}, {3, 8}, {8, maxKey}}},
		{"hashed", bson.D{{Key: "k", Value: "hashed"}}, bson.D{{Key: "k", Value: "hashed"}},
			[][2]any{{minKey, int64(0)}, {int64(0), maxKey}, {int64(-1 << 62), int64(1 << 62)}}},
		{"unindexed", bson.D{{Key: "k", Value: 1}}, nil,
			[][2]any{{minKey, 10}, {10, 20}, {20, maxKey}}},
	} {
		t.Run(tc.coll, func(t *testing.T) {
			if _, err := n.local(ctx, "db", bson.D{{Key: "insert", Value: tc.coll}, {Key: "documents", Value: docs}}); err != nil {
				t.Fatal(err)
			}
			if tc.index != nil {
				if _, err := n.local(ctx, "db", bson.D{{Key: "createIndexes", Value: tc.coll}, {Key: "indexes", Value: bson.A{
					bson.D{{Key: "key", Value: tc.index}, {Key: "name", Value: "sk"}}}}}); err != nil {
					t.Fatal(err)
				}
			}
			p, err := shard.ParsePattern(doc(t, tc.pattern))
			if err != nil {
				t.Fatal(err)
			}
			ns := "db." + tc.coll
			all, err := n.localFind(ctx, "db", tc.coll, bson.D{})
			if err != nil {
				t.Fatal(err)
			}
			field := tc.pattern[0].Key
			for _, rg := range tc.ranges {
				r, err := newRange(p, doc(t, bson.D{{Key: field, Value: rg[0]}}), doc(t, bson.D{{Key: field, Value: rg[1]}}))
				if err != nil {
					t.Fatal(err)
				}
				var want, got []string
				for _, d := range all {
					if r.holds(d) {
						want = append(want, d.Lookup("_id").String())
					}
				}
				err = n.eachInRange(ctx, ns, r, nil, func(d bsoncore.Document, _ bool) error {
					got = append(got, d.Lookup("_id").String())
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				sort.Strings(want)
				sort.Strings(got)
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("[%v, %v): read %v, the range holds %v", rg[0], rg[1], got, want)
				}
				read, indexed, err := n.rangeRead(ctx, ns, r)
				if err != nil {
					t.Fatal(err)
				}
				if indexed != (tc.coll != "unindexed") {
					t.Fatalf("[%v, %v): read through an index: %v", rg[0], rg[1], indexed)
				}
				if !indexed {
					continue
				}
				reply, err := n.local(ctx, "db", bson.D{{Key: "explain", Value: append(bson.D{{Key: "find", Value: tc.coll}}, read...)}, {Key: "verbosity", Value: "executionStats"}})
				if err != nil {
					t.Fatal(err)
				}
				examined, _ := reply.Lookup("executionStats", "totalDocsExamined").AsInt64OK()
				if examined != int64(len(want)) {
					t.Errorf("[%v, %v): %d documents examined for %d in the range: not a range scan (%s)", rg[0], rg[1], examined, len(want), reply.Lookup("queryPlanner", "winningPlan"))
				}
			}
		})
	}
}

// TestKeyIndexChoice: the shard key's index is one whose key pattern
// starts with the shard key's fields in their kind, that holds every
// document, in simple order; the shortest such.
func TestKeyIndexChoice(t *testing.T) {
	for _, tc := range []struct {
		key, pattern bson.D
		spec         bson.D // extra spec fields
		want         bool
	}{
		{bson.D{{Key: "k", Value: 1}}, bson.D{{Key: "k", Value: 1}}, nil, true},
		{bson.D{{Key: "k", Value: 1.0}}, bson.D{{Key: "k", Value: int32(1)}}, nil, true},
		{bson.D{{Key: "k", Value: 1}, {Key: "x", Value: -1}}, bson.D{{Key: "k", Value: 1}}, nil, true},
		{bson.D{{Key: "k", Value: -1}}, bson.D{{Key: "k", Value: 1}}, nil, false},
		{bson.D{{Key: "x", Value: 1}, {Key: "k", Value: 1}}, bson.D{{Key: "k", Value: 1}}, nil, false},
		{bson.D{{Key: "k", Value: "hashed"}}, bson.D{{Key: "k", Value: "hashed"}}, nil, true},
		{bson.D{{Key: "k", Value: 1}}, bson.D{{Key: "k", Value: "hashed"}}, nil, false},
		{bson.D{{Key: "k", Value: "hashed"}}, bson.D{{Key: "k", Value: 1}}, nil, false},
		{bson.D{{Key: "k", Value: 1}}, bson.D{{Key: "k", Value: 1}, {Key: "j", Value: 1}}, nil, false},
		{bson.D{{Key: "k", Value: 1}}, bson.D{{Key: "k", Value: 1}}, bson.D{{Key: "sparse", Value: true}}, false},
		{bson.D{{Key: "k", Value: 1}}, bson.D{{Key: "k", Value: 1}}, bson.D{{Key: "partialFilterExpression", Value: bson.D{{Key: "k", Value: bson.D{{Key: "$gt", Value: 1}}}}}}, false},
		{bson.D{{Key: "k", Value: 1}}, bson.D{{Key: "k", Value: 1}}, bson.D{{Key: "collation", Value: bson.D{{Key: "locale", Value: "fr"}}}}, false},
		{bson.D{{Key: "k", Value: 1}}, bson.D{{Key: "k", Value: 1}}, bson.D{{Key: "collation", Value: bson.D{{Key: "locale", Value: "simple"}}}}, true},
		{bson.D{{Key: "k", Value: 1}}, bson.D{{Key: "k", Value: 1}}, bson.D{{Key: "hidden", Value: true}}, false},
	} {
		spec := append(bson.D{{Key: "key", Value: tc.key}}, tc.spec...)
		got := keyIndexSpec(doc(t, spec)) && prefixedBy(doc(t, tc.key), doc(t, tc.pattern))
		if got != tc.want {
			t.Errorf("index %v %v for shard key %v: %v, want %v", tc.key, tc.spec, tc.pattern, got, tc.want)
		}
	}
	got := extendBound(doc(t, bson.D{{Key: "k", Value: 5}}), doc(t, bson.D{{Key: "k", Value: 1}, {Key: "a", Value: 1}, {Key: "b", Value: -1}}))
	if want := `{"k": {"$numberInt":"5"},"a": {"$minKey":1},"b": {"$maxKey":1}}`; got.String() != want {
		t.Errorf("extendBound: %s, want %s", got, want)
	}
}
