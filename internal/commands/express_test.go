package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/advise"
)

// expressCase is one stanza of TestExpressMatchesGeneral: a command run
// shapeSampleEvery times on one connection (so that the sampled query
// shapes record it once), after the shared setup.
type expressCase struct {
	name    string
	cmd     bson.D // in database "x"
	express bool   // the express path answers it (every run)
	// block holds the first run in a failCommand blockConnection, while
	// another connection lists it with currentOp and, with kill, kills it
	// (that run then ends before the handler, on either path).
	block, kill bool
}

var expressOID = bson.ObjectID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}

// expressSetup is the world every case runs in: x.c with a string, an int
// and an ObjectId _id, x.coll created with a case-insensitive collation,
// a view on x.c, profiling of every command and a slow-query line for each.
var expressSetup = []bson.D{
	{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{
		bson.D{{Key: "_id", Value: "user1"}, {Key: "f", Value: "a"}},
		bson.D{{Key: "_id", Value: int32(7)}, {Key: "f", Value: "b"}},
		bson.D{{Key: "_id", Value: expressOID}, {Key: "f", Value: "c"}},
		bson.D{{Key: "_id", Value: "user2"}, {Key: "f", Value: bson.A{1, 2}}},
	}}},
	{{Key: "create", Value: "coll"}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}}}},
	{{Key: "insert", Value: "coll"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: "A"}}, bson.D{{Key: "_id", Value: int32(3)}}}}},
	{{Key: "create", Value: "v"}, {Key: "viewOn", Value: "c"}, {Key: "pipeline", Value: bson.A{}}},
	{{Key: "profile", Value: 2}, {Key: "slowms", Value: -1}},
}

func findID(coll string, id any, more ...bson.E) bson.D {
	return append(bson.D{{Key: "find", Value: coll}, {Key: "filter", Value: bson.D{{Key: "_id", Value: id}}}}, more...)
}

// driverShape are the fields the Go driver's FindOne adds (YCSB's read).
var driverShape = []bson.E{{Key: "limit", Value: int64(1)}, {Key: "singleBatch", Value: true},
	{Key: "lsid", Value: bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: []byte("0123456789abcdef")}}}}}

// TestExpressMatchesGeneral runs each stanza's find through the express
// path and, in a second server, through the general path (Env.noExpress),
// and compares what a client can observe: every reply, serverStatus'
// counters, top, the _id index's $indexStats accesses, the profiler's
// entries, the slow-query lines, the sampled query shapes, and currentOp's
// entry of the find in progress (and killOp's effect). Invariant "The
// express path is unobservable" (express.go).
func TestExpressMatchesGeneral(t *testing.T) {
	cases := []expressCase{
		{name: "string _id found, as the driver sends it", cmd: findID("c", "user1", driverShape...), express: true},
		{name: "string _id missing", cmd: findID("c", "nobody", driverShape...), express: true},
		{name: "int _id, no limit", cmd: findID("c", int32(7)), express: true},
		{name: "long _id equal to an int _id", cmd: findID("c", int64(7), bson.E{Key: "limit", Value: int32(0)}), express: true},
		{name: "ObjectId _id, batchSize", cmd: findID("c", expressOID, bson.E{Key: "batchSize", Value: int32(5)}), express: true},
		{name: "document with an array", cmd: findID("c", "user2"), express: true},
		{name: "no such collection", cmd: findID("nothere", "user1", driverShape...), express: true},
		{name: "maxTimeMS and comment", cmd: findID("c", "user1", bson.E{Key: "maxTimeMS", Value: int32(60000)}, bson.E{Key: "comment", Value: "hi"}), express: true},
		{name: "readConcern local", cmd: findID("c", "user1", bson.E{Key: "readConcern", Value: bson.D{{Key: "level", Value: "local"}}}), express: true},
		{name: "readConcern majority", cmd: findID("c", "user1", bson.E{Key: "readConcern", Value: bson.D{{Key: "level", Value: "majority"}}}), express: true},
		{name: "readConcern snapshot", cmd: findID("c", "user1", bson.E{Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}}})},
		{name: "readConcern afterClusterTime", cmd: findID("c", "user1", bson.E{Key: "readConcern", Value: bson.D{{Key: "afterClusterTime", Value: bson.Timestamp{T: 1, I: 1}}}})},
		{name: "a transaction's statement", cmd: findID("c", "user1", driverShape[2], bson.E{Key: "txnNumber", Value: int64(1)},
			bson.E{Key: "startTransaction", Value: true}, bson.E{Key: "autocommit", Value: false})},
		{name: "a view", cmd: findID("v", "user1", driverShape...)},
		{name: "string _id, collection collation", cmd: findID("coll", "a", driverShape...)},
		{name: "int _id, collection collation", cmd: findID("coll", int32(3), driverShape...), express: true},
		{name: "showRecordId", cmd: findID("c", "user1", bson.E{Key: "showRecordId", Value: true})},
		{name: "returnKey", cmd: findID("c", "user1", bson.E{Key: "returnKey", Value: true})},
		{name: "projection", cmd: findID("c", "user1", bson.E{Key: "projection", Value: bson.D{{Key: "f", Value: 0}}})},
		{name: "hint", cmd: findID("c", "user1", bson.E{Key: "hint", Value: bson.D{{Key: "_id", Value: 1}}})},
		{name: "skip", cmd: findID("c", "user1", bson.E{Key: "skip", Value: int32(1)})},
		{name: "collation simple", cmd: findID("c", "user1", bson.E{Key: "collation", Value: bson.D{{Key: "locale", Value: "simple"}}})},
		{name: "$eq", cmd: bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "$eq", Value: "user1"}}}}}}},
		{name: "two conditions", cmd: bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: "user1"}, {Key: "f", Value: "a"}}}}},
		{name: "double _id", cmd: findID("c", 7.0)},
		{name: "error: filter not a document", cmd: bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: 1}}},
		{name: "error: negative limit", cmd: findID("c", "user1", bson.E{Key: "limit", Value: int64(-1)})},
		{name: "error: singleBatch a string", cmd: findID("c", "user1", bson.E{Key: "singleBatch", Value: "yes"})},
		{name: "error: collection name a number", cmd: bson.D{{Key: "find", Value: 5}, {Key: "filter", Value: bson.D{{Key: "_id", Value: "user1"}}}}},
		{name: "error: unknown field", cmd: findID("c", "user1", bson.E{Key: "nosuch", Value: 1})},
		{name: "error: maxTimeMS negative", cmd: findID("c", "user1", bson.E{Key: "maxTimeMS", Value: int32(-1)})},
		{name: "explain", cmd: bson.D{{Key: "explain", Value: findID("c", "user1", driverShape[:2]...)}, {Key: "verbosity", Value: "executionStats"}}},
		{name: "currentOp of a blocked find", cmd: findID("c", "user1", driverShape...), express: true, block: true},
		{name: "killOp of a blocked find", cmd: findID("c", "user1", driverShape...), express: true, block: true, kill: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			express := observeExpress(t, tc, false)
			general := observeExpress(t, tc, true)
			want := int64(0)
			if tc.express {
				want = shapeSampleEvery
				if tc.kill {
					want-- // the killed run ends before its handler
				}
			}
			if express.express != want {
				t.Errorf("the express path answered %d of %d runs, want %d", express.express, shapeSampleEvery, want)
			}
			if tc.express && (len(express.profile) < shapeSampleEvery || len(express.slowLog) != shapeSampleEvery) {
				t.Errorf("%d profiler entries and %d slow-query lines, want the %d finds' at least", len(express.profile), len(express.slowLog), shapeSampleEvery)
			}
			if general.express != 0 {
				t.Errorf("with the express path off, it answered %d runs", general.express)
			}
			e, g := express.parts(), general.parts()
			for _, name := range slices.Sorted(maps.Keys(e)) {
				if !reflect.DeepEqual(e[name], g[name]) {
					x, y := firstDiff(e[name], g[name])
					t.Errorf("%s differ:\nexpress: %v\ngeneral: %v", name, x, y)
				}
			}
		})
	}
}

// expressObs is what TestExpressMatchesGeneral compares, each part
// without the fields that differ from run to run (times, operation ids).
type expressObs struct {
	replies    []string
	status     map[string]string // serverStatus sections, as Extended JSON
	top        map[string]int64  // x.c's counts
	indexStats map[string]int64  // accesses per index of x.c
	profile    []string
	slowLog    []string
	shapes     []advise.Shape
	currentOp  string
	express    int64 // not compared: which path answered
}

// firstDiff is the first element where two observations differ (the
// whole of each when they are not lists of strings).
func firstDiff(a, b any) (any, any) {
	x, okA := a.([]string)
	y, okB := b.([]string)
	if !okA || !okB {
		return a, b
	}
	for i := range min(len(x), len(y)) {
		if x[i] != y[i] {
			return x[i], y[i]
		}
	}
	return fmt.Sprintf("%d items", len(x)), fmt.Sprintf("%d items", len(y))
}

// parts are the observations compared, by name.
func (o *expressObs) parts() map[string]any {
	return map[string]any{"replies": o.replies, "serverStatus": o.status, "top": o.top, "$indexStats": o.indexStats,
		"profiler entries": o.profile, "slow-query lines": o.slowLog, "query shapes": o.shapes, "currentOp": o.currentOp}
}

// volatile are the fields of replies, log lines and entries that differ
// between two identical runs.
var volatile = map[string]bool{"millis": true, "ts": true, "time": true, "durationMillis": true,
	"currentOpTime": true, "opid": true, "secs_running": true, "microsecs_running": true,
	"executionTimeMillis": true, "executionTimeMillisEstimate": true, "localTime": true}

// scrub deletes volatile fields from a decoded JSON value, recursively.
func scrub(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if volatile[k] {
				delete(x, k)
			} else {
				x[k] = scrub(e)
			}
		}
	case []any:
		for i, e := range x {
			x[i] = scrub(e)
		}
	}
	return v
}

func scrubbedJSON(t *testing.T, raw []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, raw)
	}
	out, _ := json.Marshal(scrub(v))
	return string(out)
}

func scrubbedDoc(t *testing.T, d bsoncore.Document) string {
	t.Helper()
	j, err := bson.MarshalExtJSON(bson.Raw(d), true, false)
	if err != nil {
		t.Fatal(err)
	}
	return scrubbedJSON(t, j)
}

// observeExpress runs tc on a fresh server (the express path off when
// noExpress) and returns what a client observes.
func observeExpress(t *testing.T, tc expressCase, noExpress bool) expressObs {
	t.Helper()
	base, sink, _ := newObservedEnv(t) // the profiler tests' server, its log in sink
	env := base.Env
	if err := env.ApplyStartupParameters([]string{"enableTestCommands=1"}); err != nil {
		t.Fatal(err)
	}
	var count atomic.Int64
	env.noExpress, env.expressReads = noExpress, &count
	ctx := context.Background()
	conn := &Session{Env: env, ConnID: 3, Remote: "127.0.0.1:5555"}
	admin := &Session{Env: env, ConnID: 4, Remote: "127.0.0.1:5556"}
	run := func(s *Session, db string, cmd bson.D) bsoncore.Document {
		return Run(ctx, s, testRequest(t, db, cmd), nil)
	}
	for _, cmd := range expressSetup {
		if r := run(admin, "x", cmd); r.Lookup("ok").Double() != 1 {
			t.Fatalf("%v: %s", cmd, r)
		}
	}
	var obs expressObs
	if tc.block {
		fp := bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: bson.D{{Key: "times", Value: 1}}},
			{Key: "data", Value: bson.D{{Key: "failCommands", Value: bson.A{"find"}}, {Key: "blockConnection", Value: true}, {Key: "blockTimeMS", Value: 1500}}}}
		if r := run(admin, "admin", fp); r.Lookup("ok").Double() != 1 {
			t.Fatalf("configureFailPoint: %s", r)
		}
		done := make(chan bsoncore.Document)
		go func() { done <- run(conn, "x", tc.cmd) }()
		deadline := time.Now().Add(10 * time.Second)
		for obs.currentOp == "" {
			if time.Now().After(deadline) {
				t.Fatal("currentOp never listed the blocked find")
			}
			r := run(admin, "admin", bson.D{{Key: "currentOp", Value: 1}, {Key: "ns", Value: "x.c"}, {Key: "op", Value: "query"}})
			ops, _ := r.Lookup("inprog").Array().Values()
			if len(ops) == 1 {
				op := ops[0].Document()
				obs.currentOp = scrubbedDoc(t, op)
				if tc.kill {
					if r := run(admin, "admin", bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: op.Lookup("opid").Int64()}}); r.Lookup("ok").Double() != 1 {
						t.Fatalf("killOp: %s", r)
					}
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
		obs.replies = append(obs.replies, scrubbedDoc(t, <-done))
	}
	for len(obs.replies) < shapeSampleEvery {
		obs.replies = append(obs.replies, scrubbedDoc(t, run(conn, "x", tc.cmd)))
	}
	status := run(admin, "admin", bson.D{{Key: "serverStatus", Value: 1}})
	obs.status = map[string]string{}
	for _, path := range [][]string{{"opcounters"}, {"metrics", "document"}, {"metrics", "queryExecutor"}, {"metrics", "commands", "find"}, {"opLatencies", "reads", "ops"}} {
		obs.status[path[len(path)-1]] = status.Lookup(path...).String()
	}
	// opcounters.command counts the currentOp commands that polled for
	// the blocked find, as many as the clock made.
	var counters bson.D
	if err := bson.Unmarshal(status.Lookup("opcounters").Document(), &counters); err != nil {
		t.Fatal(err)
	}
	counters = slices.DeleteFunc(counters, func(e bson.E) bool { return e.Key == "command" && tc.block })
	obs.status["opcounters"] = fmt.Sprint(counters)
	top := run(admin, "admin", bson.D{{Key: "top", Value: 1}})
	obs.top = map[string]int64{}
	for _, f := range []string{"total", "readLock", "queries", "commands"} {
		obs.top[f] = top.Lookup("totals", "x.c", f, "count").AsInt64()
	}
	stats := run(admin, "x", bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$indexStats", Value: bson.D{}}}}}, {Key: "cursor", Value: bson.D{}}})
	obs.indexStats = map[string]int64{}
	docs, _ := stats.Lookup("cursor", "firstBatch").Array().Values()
	for _, d := range docs {
		obs.indexStats[d.Document().Lookup("name").StringValue()] = d.Document().Lookup("accesses", "ops").AsInt64()
	}
	obs.shapes = env.Shapes.For("x.c")
	sort.Slice(obs.shapes, func(i, j int) bool { return shapeKey(obs.shapes[i]) < shapeKey(obs.shapes[j]) })
	prof := run(admin, "x", bson.D{{Key: "find", Value: "system.profile"}, {Key: "filter", Value: bson.D{{Key: "command.$db", Value: "x"}}}, {Key: "batchSize", Value: 1000}})
	entries, _ := prof.Lookup("cursor", "firstBatch").Array().Values()
	for _, e := range entries {
		var entry map[string]any
		if err := json.Unmarshal([]byte(scrubbedDoc(t, e.Document())), &entry); err != nil {
			t.Fatal(err)
		}
		delete(entry, "_id") // the profiler's own ObjectId
		b, _ := json.Marshal(entry)
		obs.profile = append(obs.profile, string(b))
	}
	for _, line := range sink.slowLines(t) {
		if line["ctx"] != "conn3" {
			continue // the setup's, slow or not by the clock
		}
		b, _ := json.Marshal(scrub(any(line)))
		obs.slowLog = append(obs.slowLog, string(b))
	}
	obs.express = count.Load()
	return obs
}

// TestExpressRecognises lists which finds expressID accepts: the plain
// ones, each value checked to the byte.
func TestExpressRecognises(t *testing.T) {
	for _, tc := range []struct {
		name string
		cmd  bson.D
		want bool
	}{
		{"driver's FindOne", findID("c", "k", driverShape...), true},
		{"int _id", findID("c", int32(1)), true},
		{"long _id", findID("c", int64(1)), true},
		{"ObjectId _id", findID("c", expressOID), true},
		{"empty string _id", findID("c", ""), true},
		{"generic arguments", findID("c", "k", bson.E{Key: "maxTimeMS", Value: 5}, bson.E{Key: "comment", Value: "x"}, bson.E{Key: "$readPreference", Value: bson.D{{Key: "mode", Value: "primary"}}}), true},
		{"batchSize 1", findID("c", "k", bson.E{Key: "batchSize", Value: int64(1)}), true},
		{"no filter", bson.D{{Key: "find", Value: "c"}}, false},
		{"empty filter", bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{}}}, false},
		{"double _id", findID("c", 1.5), false},
		{"document _id", findID("c", bson.D{{Key: "a", Value: 1}}), false},
		{"null _id", findID("c", nil), false},
		{"other field", bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: 1}}}}, false},
		{"_id and another", bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}}}}, false},
		{"batchSize 0", findID("c", "k", bson.E{Key: "batchSize", Value: int32(0)}), false},
		{"limit a double", findID("c", "k", bson.E{Key: "limit", Value: 1.0}), false},
		{"negative limit", findID("c", "k", bson.E{Key: "limit", Value: int32(-1)}), false},
		{"singleBatch a number", findID("c", "k", bson.E{Key: "singleBatch", Value: 1}), false},
		{"skip", findID("c", "k", bson.E{Key: "skip", Value: 0}), false},
		{"let", findID("c", "k", bson.E{Key: "let", Value: bson.D{}}), false},
		{"txnNumber", findID("c", "k", bson.E{Key: "txnNumber", Value: int64(1)}), false},
		{"shardVersion", findID("c", "k", bson.E{Key: "shardVersion", Value: bson.D{}}), false},
		{"tailable", findID("c", "k", bson.E{Key: "tailable", Value: true}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := testRequest(t, "x", tc.cmd)
			if _, _, got := expressID(req); got != tc.want {
				t.Errorf("expressID = %v, want %v", got, tc.want)
			}
		})
	}
}
