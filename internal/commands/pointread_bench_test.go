package commands

import (
	"context"
	"sync/atomic"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/invariants"
)

// BenchmarkPointRead is YCSB-C's read as the Go driver sends it to a
// standalone (find by _id with limit 1 and singleBatch, the implicit
// session's lsid, $db) through Request.Reset and Run on one reused Request
// and Session, as a connection serves it: the command path of issue 15's
// bound without the socket. parallel=16 runs 16 such connections at once
// on one Env (the shared counters, the session table, the operation
// registry under contention). Compare allocations and CPU per read:
// `go test -run XXX -bench PointRead -benchmem ./internal/commands/`.
func BenchmarkPointRead(b *testing.B) {
	sess := testSession(b, engine.Options{})
	docs := bson.A{}
	for i := range 1000 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "name", Value: "user"}, {Key: "n", Value: i}})
	}
	if reply := Run(context.Background(), sess, testRequest(b, "b", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}}), nil); reply.Lookup("ok").Double() != 1 {
		b.Fatal(reply)
	}
	body := func(id int, lsid bool) []byte {
		cmd := bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: id}}},
			{Key: "limit", Value: 1}, {Key: "singleBatch", Value: true}}
		if lsid {
			uuid := make([]byte, 16)
			uuid[0], uuid[6], uuid[8] = byte(id), 0x40, 0x80
			cmd = append(cmd, bson.E{Key: "lsid", Value: bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: uuid}}}})
		}
		out, err := bson.Marshal(append(cmd, bson.E{Key: "$db", Value: "b"}))
		if err != nil {
			b.Fatal(err)
		}
		return out
	}
	// read serves one connection's reads of body until more says stop.
	read := func(b *testing.B, s *Session, body []byte, more func() bool) {
		var req Request
		var dst bsoncore.Document
		n := 0
		for ; more(); n++ {
			if err := req.Reset(body, "", nil); err != nil {
				b.Error(err)
				return
			}
			dst = Run(context.Background(), s, &req, dst[:0])
		}
		if n == 0 {
			return // RunParallel can leave a goroutine nothing to do
		}
		if v, err := dst.LookupErr("cursor", "firstBatch", "0", "_id"); err != nil || v.Int32() == 0 {
			b.Errorf("no document read: %v", dst)
		}
	}
	for _, bc := range []struct {
		name string
		lsid bool
	}{{"lsid=false", false}, {"lsid=true", true}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			read(b, &Session{Env: sess.Env, ConnID: 1}, body(42, bc.lsid), b.Loop)
		})
	}
	b.Run("lsid=true/parallel=16", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(8) // 8 × GOMAXPROCS(2) = 16 goroutines
		var conn atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			id := conn.Add(1)
			read(b, &Session{Env: sess.Env, ConnID: id}, body(int(id)+100, true), pb.Next)
		})
	})
}

// TestPointReadAllocs bounds the allocations of YCSB-C's read through the
// command path (BenchmarkPointRead's, lsid and all): each is garbage the
// collector pays for on every read. 13 after issue 15's session 8 (from
// 18): the IDHACK plan object, the operation's registry entry, the parsed
// filter (its Filter, field name, matcher and comparison), its owned copy,
// the reply builder, the document read, the session entry's checkout, the
// sampled query shape (averaged); 12 after issue 16's session 11, whose
// find writes the reply's ns without building the "db.coll" string; 3
// after issue 16's session 12, whose find takes the express path (no
// parsed filter, plan object or copy of the document): the operation's
// registry entry, the collection name's string and the sampled query
// shape (averaged); 2 after session 14's (cmd16): a connection's
// collection name is kept from one find to the next, an express find's
// sampled shape is known without parsing it, and its reply is written
// without a Reply: the operation's registry entry and this test's engine
// read (a store without the document cache copies the document); 1 after
// session 18's (cpu21): a connection begins its commands in one Op of its
// own (engine's "A reused Op is a new operation"); 0 after session 19's
// (cpu22): the engine read's key stays on its stack
// (keystring.AppendScalar, storage's GetDocument).
func TestPointReadAllocs(t *testing.T) {
	const bound = 0
	sess := testSession(t, engine.Options{})
	if reply := Run(context.Background(), sess, testRequest(t, "b", bson.D{{Key: "insert", Value: "usertable"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 42}, {Key: "n", Value: 1}}}}}), nil); reply.Lookup("ok").Double() != 1 {
		t.Fatal(reply)
	}
	uuid := make([]byte, 16)
	uuid[6], uuid[8] = 0x40, 0x80
	body, err := bson.Marshal(bson.D{{Key: "find", Value: "usertable"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 42}}},
		{Key: "limit", Value: 1}, {Key: "singleBatch", Value: true},
		{Key: "lsid", Value: bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: uuid}}}}, {Key: "$db", Value: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	s := &Session{Env: sess.Env, ConnID: 1}
	var req Request
	var dst bsoncore.Document
	read := func() {
		if err := req.Reset(body, "", nil); err != nil {
			t.Fatal(err)
		}
		dst = Run(context.Background(), s, &req, dst[:0])
	}
	read()
	if v, err := dst.LookupErr("cursor", "firstBatch", "0", "n"); err != nil || v.Int32() != 1 {
		t.Fatalf("the read found no document: %v", dst)
	}
	if n := testing.AllocsPerRun(1000, read); raceEnabled || invariants.Enabled {
		t.Logf("allocations not compared in this build (the race detector's pools, the invariants' records): %.1f", n)
	} else if n > bound {
		t.Errorf("%.1f allocations per point read, want at most %d", n, bound)
	} else {
		t.Logf("%.1f allocations per point read (bound %d)", n, bound)
	}
}
