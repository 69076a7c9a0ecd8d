package router

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/commands"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/shard"
)

func doc(t *testing.T, ext string) bsoncore.Document {
	t.Helper()
	var d bson.D
	if err := bson.UnmarshalExtJSON([]byte(ext), false, &d); err != nil {
		t.Fatalf("%s: %v", ext, err)
	}
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTargetStatement checks 7.0's rules for single and multi writes on a
// collection sharded on {a: 1} over two shards split at a: 10.
func TestTargetStatement(t *testing.T) {
	p, err := shard.ParsePattern(doc(t, `{"a": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	m := shard.NewMap("db.c", p, bson.NewObjectID(), "s0")
	if err := m.Split(doc(t, `{"a": 10}`)); err != nil {
		t.Fatal(err)
	}
	if err := m.Move(1, "s1"); err != nil {
		t.Fatal(err)
	}
	rt := &routing{db: &dbInfo{name: "db", primary: "s0"}, coll: &collInfo{m: m}, ns: "db.c"}
	for _, c := range []struct {
		kind, stmt string
		shards     int
		code       mongoerr.Code
	}{
		{"update", `{"q": {"a": 3}, "u": {"$set": {"x": 1}}}`, 1, 0},
		{"update", `{"q": {"x": 3}, "u": {"$set": {"x": 1}}}`, 0, mongoerr.InvalidOptions},
		{"update", `{"q": {"x": 3}, "u": {"$set": {"x": 1}}, "multi": true}`, 2, 0},
		{"update", `{"q": {"_id": 3}, "u": {"$set": {"x": 1}}}`, 2, 0},
		{"update", `{"q": {"_id": {"$gt": 3}}, "u": {"$set": {"x": 1}}}`, 0, mongoerr.InvalidOptions},
		{"update", `{"q": {"_id": 3}, "u": {"$set": {"x": 1}}, "upsert": true}`, 0, mongoerr.ShardKeyNotFound},
		{"update", `{"q": {"a": 3}, "u": {"$set": {"x": 1}}, "upsert": true}`, 1, 0},
		{"update", `{"q": {"a": 3}, "u": {"$set": {"a": 4}}}`, 0, mongoerr.IllegalOperation},
		{"update", `{"q": {"a": 3}, "u": {"$rename": {"x": "a"}}}`, 0, mongoerr.IllegalOperation},
		{"update", `{"q": {"a": 3}, "u": {"$unset": {"a.b": 1}}}`, 0, mongoerr.IllegalOperation},
		{"update", `{"q": {"a": 3}, "u": [{"$set": {"x": 1}}]}`, 1, 0},
		{"update", `{"q": {"a": 3}, "u": [{"$replaceWith": {"a": 1}}]}`, 0, mongoerr.IllegalOperation},
		{"update", `{"q": {"_id": 1}, "u": {"a": 30, "x": 1}}`, 1, 0},
		{"update", `{"q": {"a": 3}, "u": {"a": 30, "x": 1}}`, 0, mongoerr.IllegalOperation},
		{"update", `{"q": {"a": 3}, "u": {"a": [1], "x": 1}}`, 0, mongoerr.ShardKeyNotFound},
		{"delete", `{"q": {"a": 30}, "limit": 1}`, 1, 0},
		{"delete", `{"q": {"x": 30}, "limit": 1}`, 0, mongoerr.ShardKeyNotFound},
		{"delete", `{"q": {"x": 30}, "limit": 0}`, 2, 0},
		{"delete", `{"q": {"_id": {"$eq": 1}}, "limit": 1}`, 2, 0},
	} {
		shards, err := targetStatement(rt, doc(t, c.stmt), c.kind)
		if mongoerr.CodeOf(err) != c.code || len(shards) != c.shards {
			t.Errorf("%s %s: shards %v, err %v; want %d shards, code %d", c.kind, c.stmt, shards, err, c.shards, c.code)
		}
	}
}

func TestRewriteDropsClientFields(t *testing.T) {
	in := doc(t, `{"find": "c", "filter": {}, "lsid": {"id": 1}, "$db": "x", "$clusterTime": {}, "limit": 3, "shardVersion": 1}`)
	out := rewrite(in, map[string]bool{"limit": true}, func(b *bsoncore.DocumentBuilder) { b.AppendString("$db", "y") })
	want := doc(t, `{"find": "c", "filter": {}, "$db": "y"}`)
	if string(out) != string(want) {
		t.Fatalf("rewrite: %s, want %s", out, want)
	}
}

type closeCounter struct{ closed int }

func (c *closeCounter) Next() (bsoncore.Document, error) { return nil, nil }
func (c *closeCounter) Close() error                     { c.closed++; return nil }

// TestCursorReap: a router cursor left unread past cursorTimeout is killed
// (its shards' cursors closed); one read recently stays.
func TestCursorReap(t *testing.T) {
	var cs cursors
	cs.m = map[int64]*routerCursor{}
	idle, busy := &closeCounter{}, &closeCounter{}
	a, b := &routerCursor{src: idle}, &routerCursor{src: busy}
	cs.add(a)
	cs.add(b)
	a.used = a.used.Add(-cursorTimeout - 1)
	cs.reap(b.used)
	if idle.closed != 1 || busy.closed != 0 || cs.get(a.id) != nil || cs.get(b.id) == nil {
		t.Fatalf("after reaping: idle closed %d, busy closed %d, idle kept %v", idle.closed, busy.closed, cs.get(a.id) != nil)
	}
}

// TestEveryHandlerHasPrivilegeRule: with a keyFile the router checks every
// command against commands.Authorize's rules, which refuse a command they
// do not know; so each of the router's commands needs one.
func TestEveryHandlerHasPrivilegeRule(t *testing.T) {
	for name := range handlers {
		if !commands.HasPrivilegeRule(name) {
			t.Errorf("the router's command %s has no privilege rule (internal/commands/privileges.go)", name)
		}
	}
}
