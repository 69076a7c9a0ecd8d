package server_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/wire"
)

// Tests of cancellation over the wire: killOp, a client closing its socket,
// and maxTimeMS, each against an operation that would otherwise run for
// many seconds. The slow work is an expression per document ($range of
// slowRange numbers), so every family — scan, aggregation stage, write —
// spends its time where it must check its context.

const (
	slowDocs  = 8000
	slowRange = 10000
)

// slowExpr costs a few hundred microseconds per document and is never true.
func slowExpr() bson.D {
	return bson.D{{Key: "$eq", Value: bson.A{bson.D{{Key: "$size", Value: bson.D{{Key: "$range", Value: bson.A{0, slowRange}}}}}, -1}}}
}

// slowFilter makes a collection scan take seconds.
func slowFilter() bson.D { return bson.D{{Key: "$expr", Value: slowExpr()}} }

// slowCollection starts a server holding slowDocs documents in test.slow.
func slowCollection(t *testing.T) (*testServer, *mongo.Client) {
	t.Helper()
	s := startServer(t)
	c := s.client(t)
	docs := make([]any, slowDocs)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "n", Value: i}}
	}
	if _, err := c.Database("test").Collection("slow").InsertMany(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	return s, c
}

// sendRaw writes one command on its own connection and returns the
// connection and a channel with the reply (nil when the connection closed).
func sendRaw(t *testing.T, s *testServer, cmd bson.D) (net.Conn, <-chan bsoncore.Document) {
	t.Helper()
	nc := dial(t, s)
	msg := command(t, cmd)
	out := make(chan bsoncore.Document, 1)
	go func() { out <- roundTrip(t, nc, msg) }()
	return nc, out
}

// opOf waits until currentOp lists an operation whose command has key
// (find, aggregate, …) on collection slow, and returns its opid.
func opOf(t *testing.T, c *mongo.Client, key string) int64 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if id, ok := findOp(t, c, key); ok {
			return id
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no %s operation appeared in currentOp", key)
	return 0
}

func findOp(t *testing.T, c *mongo.Client, key string) (int64, bool) {
	t.Helper()
	var res struct {
		Inprog []bson.Raw `bson:"inprog"`
	}
	filter := bson.D{{Key: "currentOp", Value: 1}, {Key: "command." + key, Value: "slow"}}
	if err := c.Database("admin").RunCommand(context.Background(), filter).Decode(&res); err != nil {
		t.Fatal(err)
	}
	for _, op := range res.Inprog {
		for _, field := range []string{"opid", "active", "secs_running", "microsecs_running", "op", "ns", "command", "client", "connectionId", "desc"} {
			if _, err := op.LookupErr(field); err != nil {
				t.Fatalf("currentOp entry lacks %s: %s", field, op)
			}
		}
		wantKind := map[string]string{"find": "query", "aggregate": "command"}[key]
		if kind := op.Lookup("op").StringValue(); kind != wantKind {
			t.Fatalf("currentOp op of a %s = %q, want %q", key, kind, wantKind)
		}
		return op.Lookup("opid").Int64(), true
	}
	return 0, false
}

func replyCode(t *testing.T, reply bsoncore.Document) mongoerr.Code {
	t.Helper()
	if reply == nil {
		t.Fatal("the connection closed instead of replying")
	}
	if reply.Lookup("ok").Double() != 0 {
		t.Fatalf("the operation succeeded: %s", reply)
	}
	return mongoerr.Code(reply.Lookup("code").Int32())
}

func waitReply(t *testing.T, replies <-chan bsoncore.Document, within time.Duration) bsoncore.Document {
	t.Helper()
	select {
	case r := <-replies:
		return r
	case <-time.After(within):
		t.Fatalf("no reply within %v", within)
		return nil
	}
}

// TestKillOp: killOp interrupts a long collection scan and a long
// aggregation; each victim answers Interrupted (11601).
func TestKillOp(t *testing.T) {
	s, c := slowCollection(t)
	for _, tc := range []struct {
		name, key string
		cmd       bson.D
	}{
		{"collection scan", "find", bson.D{{Key: "find", Value: "slow"}, {Key: "filter", Value: slowFilter()}, {Key: "$db", Value: "test"}}},
		{"aggregation", "aggregate", bson.D{{Key: "aggregate", Value: "slow"}, {Key: "pipeline", Value: bson.A{
			bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "n", Value: bson.D{{Key: "$sum", Value: bson.D{{Key: "$size", Value: bson.D{{Key: "$range", Value: bson.A{0, slowRange}}}}}}}}}}},
		}}, {Key: "cursor", Value: bson.D{}}, {Key: "$db", Value: "test"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, replies := sendRaw(t, s, tc.cmd)
			id := opOf(t, c, tc.key)
			var res bson.M
			if err := c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: id}}).Decode(&res); err != nil {
				t.Fatal(err)
			}
			if res["info"] != "attempting to kill op" {
				t.Fatalf("killOp replied %v", res)
			}
			killed := time.Now()
			reply := waitReply(t, replies, 5*time.Second)
			if code := replyCode(t, reply); code != mongoerr.Interrupted {
				t.Fatalf("the victim answered code %d, want Interrupted: %s", code, reply)
			}
			t.Logf("interrupted %v after killOp", time.Since(killed))
		})
	}
}

// TestKillOpInput: killOp's op argument as MongoDB parses it, and killOp
// only on admin.
func TestKillOpInput(t *testing.T) {
	s := startServer(t)
	nc := dial(t, s)
	for _, tc := range []struct {
		name string
		cmd  bson.D
		want mongoerr.Code // 0: accepted
	}{
		{"unknown opid", bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: 123456}, {Key: "$db", Value: "admin"}}, 0},
		{"missing op", bson.D{{Key: "killOp", Value: 1}, {Key: "$db", Value: "admin"}}, mongoerr.NoSuchKey},
		{"string op", bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: "12"}, {Key: "$db", Value: "admin"}}, mongoerr.TypeMismatch},
		{"fractional op", bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: 1.5}, {Key: "$db", Value: "admin"}}, mongoerr.BadValue},
		{"op beyond 32 bits", bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: int64(1) << 40}, {Key: "$db", Value: "admin"}}, mongoerr.OpIDOutOfRange},
		{"not on admin", bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: 1}, {Key: "$db", Value: "test"}}, mongoerr.Unauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reply := roundTrip(t, nc, command(t, tc.cmd))
			if reply == nil {
				t.Fatal("connection closed")
			}
			var got mongoerr.Code
			if reply.Lookup("ok").Double() != 1 {
				got = mongoerr.Code(reply.Lookup("code").Int32())
			} else if info := reply.Lookup("info").StringValue(); info != "attempting to kill op" {
				t.Fatalf("info %q", info)
			}
			if got != tc.want {
				t.Fatalf("code %d, want %d: %s", got, tc.want, reply)
			}
		})
	}
}

// TestClientCloseFreesOperation: a client that closes its socket mid-scan
// frees the operation within 100 ms (it leaves currentOp). The time
// measured includes the currentOp round trips that look for it, which a
// loaded machine (make test's race builds on two cores) can stretch past
// the bound on its own: the bound must hold in one of three tries, and
// every try must free the operation within 2 s.
func TestClientCloseFreesOperation(t *testing.T) {
	s, c := slowCollection(t)
	var tries []time.Duration
	for range 3 {
		nc, _ := sendRaw(t, s, bson.D{{Key: "find", Value: "slow"}, {Key: "filter", Value: slowFilter()}, {Key: "$db", Value: "test"}})
		opOf(t, c, "find")
		time.Sleep(20 * time.Millisecond) // past the server's watchAfter: the watched case
		closed := time.Now()
		_ = nc.Close()
		for {
			if _, ok := findOp(t, c, "find"); !ok {
				break
			}
			if time.Since(closed) > 2*time.Second {
				t.Fatal("the operation of a closed connection still runs after 2 s")
			}
			time.Sleep(time.Millisecond)
		}
		gone := time.Since(closed)
		t.Logf("operation gone %v after the client closed", gone)
		if gone <= 100*time.Millisecond {
			return
		}
		tries = append(tries, gone)
	}
	t.Fatalf("the operation of a closed connection ran %v after the close in three tries, want ≤ 100 ms in one", tries)
}

// TestMaxTimeMSEndsEveryFamily: maxTimeMS 100 ends each command family
// with MaxTimeMSExpired well before its work would finish, writes included
// (issue 17 saw a multi-document update with maxTimeMS 300 run 29 s).
func TestMaxTimeMSEndsEveryFamily(t *testing.T) {
	s, c := slowCollection(t)
	// What the whole work would take on this machine now: the slow filter
	// over 200 documents (found through the _id index), scaled up. The
	// bound below is a share of it, so a loaded machine moves both.
	began := time.Now()
	sample := bson.D{{Key: "count", Value: "slow"}, {Key: "query", Value: bson.D{{Key: "$and", Value: bson.A{
		bson.D{{Key: "_id", Value: bson.D{{Key: "$lt", Value: 200}}}}, slowFilter()}}}}}
	if err := c.Database("test").RunCommand(context.Background(), sample).Err(); err != nil {
		t.Fatal(err)
	}
	whole := time.Since(began) * slowDocs / 200
	bound := max(400*time.Millisecond, whole/4)
	t.Logf("the whole slow work would take about %v; bound %v", whole, bound)
	slowSet := bson.A{bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: bson.D{{Key: "$size", Value: bson.D{{Key: "$range", Value: bson.A{0, slowRange}}}}}}}}}}
	for _, tc := range []struct {
		name string
		cmd  bson.D
	}{
		{"find", bson.D{{Key: "find", Value: "slow"}, {Key: "filter", Value: slowFilter()}}},
		{"count", bson.D{{Key: "count", Value: "slow"}, {Key: "query", Value: slowFilter()}}},
		{"distinct", bson.D{{Key: "distinct", Value: "slow"}, {Key: "key", Value: "n"}, {Key: "query", Value: slowFilter()}}},
		{"aggregate", bson.D{{Key: "aggregate", Value: "slow"}, {Key: "pipeline", Value: bson.A{
			bson.D{{Key: "$project", Value: bson.D{{Key: "x", Value: bson.D{{Key: "$size", Value: bson.D{{Key: "$range", Value: bson.A{0, slowRange}}}}}}}}},
			bson.D{{Key: "$count", Value: "n"}},
		}}, {Key: "cursor", Value: bson.D{}}}},
		{"update multi (scan)", bson.D{{Key: "update", Value: "slow"}, {Key: "updates", Value: bson.A{
			bson.D{{Key: "q", Value: slowFilter()}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "y", Value: 1}}}}}, {Key: "multi", Value: true}},
		}}}},
		{"update multi (writes)", bson.D{{Key: "update", Value: "slow"}, {Key: "updates", Value: bson.A{
			bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: slowSet}, {Key: "multi", Value: true}},
		}}}},
		{"delete many", bson.D{{Key: "delete", Value: "slow"}, {Key: "deletes", Value: bson.A{
			bson.D{{Key: "q", Value: slowFilter()}, {Key: "limit", Value: 0}},
		}}}},
		{"findAndModify", bson.D{{Key: "findAndModify", Value: "slow"}, {Key: "query", Value: slowFilter()}, {Key: "remove", Value: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := append(append(bson.D{}, tc.cmd...), bson.E{Key: "maxTimeMS", Value: 100}, bson.E{Key: "$db", Value: "test"})
			start := time.Now()
			reply := roundTrip(t, dial(t, s), command(t, cmd))
			took := time.Since(start)
			if code := replyCode(t, reply); code != mongoerr.MaxTimeMSExpired {
				t.Fatalf("code %d, want MaxTimeMSExpired: %s", code, reply)
			}
			t.Logf("expired after %v", took)
			// Issue 17 asks for 150 ms; the bound here is 400 ms, or a
			// quarter of the whole work when a loaded machine slows both.
			if took > bound {
				t.Fatalf("maxTimeMS 100 ended the command after %v (the whole work: about %v)", took, whole)
			}
		})
	}
	// The interrupted writes stopped part-way: nothing was deleted (the scan
	// found nothing), and the rest of the data is intact.
	n, err := c.Database("test").Collection("slow").CountDocuments(context.Background(), bson.D{})
	if err != nil || n != slowDocs {
		t.Fatalf("after the interrupted writes: %d documents, %v", n, err)
	}
}

// TestMaxTimeMSInput: maxTimeMS values as MongoDB 7.0's parseMaxTimeMS
// reads them: every refusal is BadValue.
func TestMaxTimeMSInput(t *testing.T) {
	s := startServer(t)
	nc := dial(t, s)
	for _, tc := range []struct {
		name string
		val  any
		want mongoerr.Code // 0: accepted
	}{
		{"int", int32(1000), 0},
		{"long", int64(1000), 0},
		{"integral double", 1000.0, 0},
		{"zero", 0, 0},
		{"int32 max", int64(2147483647), 0},
		{"fractional double", 1000.5, mongoerr.BadValue},
		{"negative int", -1, mongoerr.BadValue},
		{"negative double", -1.5, mongoerr.BadValue},
		{"beyond int32", int64(2147483648), mongoerr.BadValue},
		{"huge double", 1e300, mongoerr.BadValue},
		{"null", nil, mongoerr.BadValue},
		{"string", "10", mongoerr.BadValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reply := roundTrip(t, nc, command(t, bson.D{{Key: "find", Value: "c"}, {Key: "maxTimeMS", Value: tc.val}, {Key: "$db", Value: "test"}}))
			if reply == nil {
				t.Fatal("connection closed")
			}
			var got mongoerr.Code
			if reply.Lookup("ok").Double() != 1 {
				got = mongoerr.Code(reply.Lookup("code").Int32())
			}
			if got != tc.want {
				t.Fatalf("code %d, want %d: %s", got, tc.want, reply)
			}
			if got != 0 && reply.Lookup("codeName").StringValue() == "" {
				t.Fatalf("no codeName: %s", reply)
			}
		})
	}
	// On getMore, maxTimeMS is an awaitData cursor's wait; Cairn has none,
	// and MongoDB refuses it on any other cursor (after finding the cursor).
	reply := roundTrip(t, nc, command(t, bson.D{{Key: "getMore", Value: int64(1)}, {Key: "collection", Value: "c"}, {Key: "maxTimeMS", Value: 10}, {Key: "$db", Value: "test"}}))
	if code := replyCode(t, reply); code != mongoerr.CursorNotFound {
		t.Fatalf("getMore of no cursor with maxTimeMS: code %d, want CursorNotFound", code)
	}
	roundTrip(t, nc, command(t, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}}}, {Key: "$db", Value: "test"}}))
	reply = roundTrip(t, nc, command(t, bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 1}, {Key: "$db", Value: "test"}}))
	id, ok := reply.Lookup("cursor", "id").Int64OK()
	if !ok || id == 0 {
		t.Fatalf("find with batchSize 1 left no cursor: %s", reply)
	}
	reply = roundTrip(t, nc, command(t, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}, {Key: "maxTimeMS", Value: 10}, {Key: "$db", Value: "test"}}))
	if code := replyCode(t, reply); code != mongoerr.BadValue {
		t.Fatalf("getMore with maxTimeMS: code %d, want BadValue", code)
	}
	reply = roundTrip(t, nc, command(t, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}, {Key: "$db", Value: "test"}}))
	if reply == nil || reply.Lookup("ok").Double() != 1 {
		t.Fatalf("the cursor did not survive the refused getMore: %s", reply)
	}
}

// TestMaxTimeMSRollsOverToGetMore: a cursor's getMores share what is left
// of the originating find's maxTimeMS, as MongoDB's do.
func TestMaxTimeMSRollsOverToGetMore(t *testing.T) {
	s, _ := slowCollection(t)
	nc := dial(t, s)
	// Every document matches, slowly: a batch of 20 costs ~20 ms. The find's
	// own batch is 2, so that a loaded machine does not spend the 300 ms
	// before the first getMore.
	matchAll := bson.D{{Key: "$expr", Value: bson.D{{Key: "$not", Value: bson.A{slowExpr()}}}}}
	reply := roundTrip(t, nc, command(t, bson.D{{Key: "find", Value: "slow"}, {Key: "filter", Value: matchAll},
		{Key: "batchSize", Value: 2}, {Key: "maxTimeMS", Value: 300}, {Key: "$db", Value: "test"}}))
	if reply == nil || reply.Lookup("ok").Double() != 1 {
		t.Fatalf("find: %s", reply)
	}
	id := reply.Lookup("cursor", "id").Int64()
	start := time.Now()
	for batches := 1; ; batches++ {
		reply = roundTrip(t, nc, command(t, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "slow"}, {Key: "batchSize", Value: 20}, {Key: "$db", Value: "test"}}))
		if reply == nil {
			t.Fatal("connection closed")
		}
		if reply.Lookup("ok").Double() == 0 {
			if code := mongoerr.Code(reply.Lookup("code").Int32()); code != mongoerr.MaxTimeMSExpired {
				t.Fatalf("getMore %d: code %d, want MaxTimeMSExpired", batches, code)
			}
			t.Logf("expired at getMore %d, %v after the find", batches, time.Since(start))
			return
		}
		if reply.Lookup("cursor", "id").Int64() == 0 {
			t.Fatalf("the cursor finished (%d getMores, %v) without its 300 ms running out", batches, time.Since(start))
		}
	}
}

// TestPipelinedRequestDuringWatch: a request the client sends while its
// previous, long command runs is read by the socket watch; it must still be
// served, whole and in order.
func TestPipelinedRequestDuringWatch(t *testing.T) {
	s, _ := slowCollection(t)
	nc := dial(t, s)
	slow := command(t, bson.D{{Key: "count", Value: "slow"}, {Key: "query", Value: slowFilter()}, {Key: "maxTimeMS", Value: 50}, {Key: "$db", Value: "test"}})
	// A second request larger than one watch read, so it arrives in parts.
	big := make([]byte, 2000)
	for i := range big {
		big[i] = 'x'
	}
	echo := command(t, bson.D{{Key: "ping", Value: 1}, {Key: "comment", Value: string(big)}, {Key: "$db", Value: "admin"}})
	if _, err := nc.Write(slow); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // the slow count is being watched now
	if _, err := nc.Write(echo); err != nil {
		t.Fatal(err)
	}
	r := wire.NewReader(nc, 0)
	first, err := r.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	if code := replyCode(t, first.Msg.Body); code != mongoerr.MaxTimeMSExpired {
		t.Fatalf("first reply code %d, want MaxTimeMSExpired", code)
	}
	second, err := r.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	if second.Msg.Body.Lookup("ok").Double() != 1 {
		t.Fatalf("the pipelined ping: %s", second.Msg.Body)
	}
}

// TestInterruptedIndexBuildIsAborted: a createIndexes whose maxTimeMS
// passes, or whose build killOp interrupts, fails with that code and
// leaves no index behind, as MongoDB aborts a build whose command is
// interrupted.
func TestInterruptedIndexBuildIsAborted(t *testing.T) {
	s, c := slowCollection(t)
	// Slow the build down: 10 documents a batch, 2 ms after each.
	s.env.Engine.SetIndexBuildTuning(engine.IndexBuildTuning{BatchDocs: 10, AfterBatch: func(_, _ int64) { time.Sleep(2 * time.Millisecond) }})
	create := func(name string, extra ...bson.E) bson.D {
		return append(bson.D{{Key: "createIndexes", Value: "slow"}, {Key: "indexes", Value: bson.A{
			bson.D{{Key: "key", Value: bson.D{{Key: "n", Value: 1}}}, {Key: "name", Value: name}}}}}, append(extra, bson.E{Key: "$db", Value: "test"})...)
	}
	indexes := func() []string {
		specs, err := c.Database("test").Collection("slow").Indexes().ListSpecifications(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, sp := range specs {
			names = append(names, sp.Name)
		}
		return names
	}
	t.Run("maxTimeMS", func(t *testing.T) {
		start := time.Now()
		reply := roundTrip(t, dial(t, s), command(t, create("n_1", bson.E{Key: "maxTimeMS", Value: 50})))
		if code := replyCode(t, reply); code != mongoerr.MaxTimeMSExpired {
			t.Fatalf("code %d, want MaxTimeMSExpired: %s", code, reply)
		}
		t.Logf("expired after %v", time.Since(start))
		if names := indexes(); len(names) != 1 {
			t.Fatalf("indexes after the aborted build: %v, want only _id_", names)
		}
	})
	t.Run("killOp of the build", func(t *testing.T) {
		_, replies := sendRaw(t, s, create("n_1"))
		var id int64
		for deadline := time.Now().Add(5 * time.Second); id == 0 && time.Now().Before(deadline); {
			var res struct {
				Inprog []bson.Raw `bson:"inprog"`
			}
			if err := c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "currentOp", Value: 1}, {Key: "desc", Value: "IndexBuildsCoordinatorMongod"}}).Decode(&res); err != nil {
				t.Fatal(err)
			}
			if len(res.Inprog) > 0 {
				id = res.Inprog[0].Lookup("opid").Int64()
			}
		}
		if id == 0 {
			t.Fatal("the build never appeared in currentOp")
		}
		if err := c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: id}}).Err(); err != nil {
			t.Fatal(err)
		}
		if code := replyCode(t, waitReply(t, replies, 5*time.Second)); code != mongoerr.Interrupted {
			t.Fatalf("createIndexes after killOp of its build: code %d, want Interrupted", code)
		}
		if names := indexes(); len(names) != 1 {
			t.Fatalf("indexes after the aborted build: %v, want only _id_", names)
		}
	})
}

// TestKillOpEndsAwaitData: an awaitData getMore waiting for inserts (here
// up to 30 s) ends at killOp with Interrupted, and its cursor is gone, as
// any interrupted getMore's is.
func TestKillOpEndsAwaitData(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	db := c.Database("test")
	if err := db.RunCommand(ctx, bson.D{{Key: "create", Value: "tail"}, {Key: "capped", Value: true}, {Key: "size", Value: 4096}}).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("tail").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	var first struct {
		Cursor struct {
			ID int64 `bson:"id"`
		} `bson:"cursor"`
	}
	// The cursor is opened in an explicit session, whose lsid the raw
	// getMore sends too: a cursor belongs to its session (50737 otherwise).
	sess, err := c.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	sctx := mongo.NewSessionContext(ctx, sess)
	if err := db.RunCommand(sctx, bson.D{{Key: "find", Value: "tail"}, {Key: "tailable", Value: true}, {Key: "awaitData", Value: true}}).Decode(&first); err != nil || first.Cursor.ID == 0 {
		t.Fatalf("tailable find: cursor %d, %v", first.Cursor.ID, err)
	}
	_, replies := sendRaw(t, s, bson.D{{Key: "getMore", Value: first.Cursor.ID}, {Key: "collection", Value: "tail"}, {Key: "maxTimeMS", Value: 30000}, {Key: "lsid", Value: sess.ID()}, {Key: "$db", Value: "test"}})
	var opid int64
	for deadline := time.Now().Add(10 * time.Second); opid == 0 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		var res struct {
			Inprog []bson.Raw `bson:"inprog"`
		}
		if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "currentOp", Value: 1}, {Key: "command.collection", Value: "tail"}}).Decode(&res); err != nil {
			t.Fatal(err)
		}
		if len(res.Inprog) > 0 {
			opid = res.Inprog[0].Lookup("opid").Int64()
		}
	}
	if opid == 0 {
		t.Fatal("the waiting getMore never appeared in currentOp")
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: opid}}).Err(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if code := replyCode(t, waitReply(t, replies, 5*time.Second)); code != mongoerr.Interrupted {
		t.Fatalf("the waiting getMore answered code %d, want Interrupted", code)
	}
	t.Logf("the await ended %v after killOp", time.Since(killed))
	err = db.RunCommand(sctx, bson.D{{Key: "getMore", Value: first.Cursor.ID}, {Key: "collection", Value: "tail"}}).Err()
	if commandCode(err) != int32(mongoerr.CursorNotFound) {
		t.Fatalf("getMore after the killed one: %v, want CursorNotFound", err)
	}
}

// TestHugeValueExpressionsHonourMaxTime: one expression over one huge
// value (issue 17: a regex count over a 10 MiB string with maxTimeMS 1000
// ran 13–53 s). Loops that build arrays ($regexFindAll's matches, $split's
// parts) check the deadline as they go and end within it. A single regular
// expression match cannot be interrupted (Go's RE2 engine runs to the end
// of its input), but it is linear in the input: the known gap listed in
// RELIABILITY.md, bounded here at 15 s so that a return of the quadratic
// behaviour (the match offsets of $regexFindAll were counted from the start
// of the string for every match: hours) fails. The loops' bound is three
// times maxTimeMS plus twice what reading the document and one pass over
// it take on the machine at the time.
func TestHugeValueExpressionsHonourMaxTime(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	big := strings.Repeat("abcdefghij", 1<<20) // 10 MiB
	if _, err := c.Database("test").Collection("huge").InsertOne(context.Background(), bson.D{{Key: "_id", Value: 1}, {Key: "s", Value: big}}); err != nil {
		t.Fatal(err)
	}
	const maxTime = 1000 * time.Millisecond
	const oneMatch = 15 * time.Second * raceSlowdown // a single RE2 match: not interruptible
	// What reading the document and one pass over the string cost this
	// machine now (a loaded machine under -race stretches them several
	// times): the loops' bounds allow it twice beside their own.
	began := time.Now()
	if err := c.Database("test").RunCommand(context.Background(), bson.D{{Key: "aggregate", Value: "huge"}, {Key: "pipeline", Value: bson.A{
		bson.D{{Key: "$project", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$strLenBytes", Value: "$s"}}}}}},
	}}, {Key: "cursor", Value: bson.D{}}}).Err(); err != nil {
		t.Fatal(err)
	}
	pass := time.Since(began)
	t.Logf("reading the document and one pass over it: %v", pass)
	for _, tc := range []struct {
		name  string
		cmd   bson.D
		bound time.Duration
	}{
		{"count with a regex over the string", bson.D{{Key: "count", Value: "huge"}, {Key: "query", Value: bson.D{{Key: "s", Value: bson.D{{Key: "$regex", Value: "(a|b|c)*j.*z$"}}}}}}, oneMatch},
		{"case-insensitive regex", bson.D{{Key: "count", Value: "huge"}, {Key: "query", Value: bson.D{{Key: "s", Value: bson.D{{Key: "$regex", Value: "(x+x+)+y"}, {Key: "$options", Value: "i"}}}}}}, oneMatch},
		{"$regexFindAll over the string", bson.D{{Key: "aggregate", Value: "huge"}, {Key: "pipeline", Value: bson.A{
			bson.D{{Key: "$project", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$size", Value: bson.D{{Key: "$regexFindAll", Value: bson.D{{Key: "input", Value: "$s"}, {Key: "regex", Value: "a"}}}}}}}}}},
		}}, {Key: "cursor", Value: bson.D{}}}, 3*maxTime + 2*pass},
		{"$split of the string", bson.D{{Key: "aggregate", Value: "huge"}, {Key: "pipeline", Value: bson.A{
			bson.D{{Key: "$project", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$size", Value: bson.D{{Key: "$split", Value: bson.A{"$s", "a"}}}}}}}}},
		}}, {Key: "cursor", Value: bson.D{}}}, 3*maxTime + 2*pass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := append(append(bson.D{}, tc.cmd...), bson.E{Key: "maxTimeMS", Value: maxTime.Milliseconds()}, bson.E{Key: "$db", Value: "test"})
			nc := dial(t, s)
			_ = nc.SetDeadline(time.Now().Add(tc.bound + 10*time.Second)) // dial's 20 s is below a single match's bound under -race
			start := time.Now()
			reply := roundTrip(t, nc, command(t, cmd))
			took := time.Since(start)
			if reply == nil {
				t.Fatalf("no reply after %v", took)
			}
			var code mongoerr.Code
			if reply.Lookup("ok").Double() != 1 {
				code = mongoerr.Code(reply.Lookup("code").Int32())
			}
			t.Logf("code %d after %v", code, took)
			if code != 0 && code != mongoerr.MaxTimeMSExpired && code != mongoerr.ExceededMemoryLimit {
				t.Fatalf("code %d: %s", code, reply)
			}
			if took > tc.bound {
				t.Fatalf("maxTimeMS %v: the command ran %v (bound %v)", maxTime, took, tc.bound)
			}
		})
	}
}
