package commands

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn/internal/engine"
)

// BenchmarkUpdateByID measures the command layer's cost of an update by
// _id in process (issue 16's "one read per update"): a $set of one field
// on one of 10,000 documents, one statement per command, as YCSB-A sends
// it, the same as an upsert of an existing document, and an upsert that
// inserts (a new, descending _id each time; the command is built in the
// loop). The WAL is
// synced on an interval, so that the figure is the CPU of the write path
// rather than the disk's sync.
func BenchmarkUpdateByID(b *testing.B) {
	sess := testSession(b, engine.Options{SyncInterval: 100 * time.Millisecond})
	docs := bson.A{}
	for i := range 10000 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "field0", Value: "value"}, {Key: "field1", Value: "value"}})
	}
	Run(context.Background(), sess, testRequest(b, "b", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}}), nil)
	for _, bc := range []struct {
		name, field    string // a field of its own, which no other case left half-flipped
		upsert, insert bool
	}{{"set", "field0", false, false}, {"set_upsert", "field1", true, false}, {"upsert_insert", "field2", true, true}} {
		b.Run(bc.name, func(b *testing.B) {
			// 64 documents, each set to alternate values, so that every
			// update changes its document (a no-op writes nothing).
			bodies := make([][]byte, 128)
			for i := range bodies {
				bodies[i], _ = bson.Marshal(bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{
					{Key: "q", Value: bson.D{{Key: "_id", Value: (i % 64) * 97}}},
					{Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: bc.field, Value: bson.Binary{Data: []byte{byte(i / 64), 1, 2, 3}}}}}}},
					{Key: "upsert", Value: bc.upsert},
				}}}, {Key: "$db", Value: "b"}})
			}
			if bc.insert {
				// Each upsert names an _id no document has, below every
				// stored one (so that no tail bound spares the insert its
				// uniqueness check): it inserts.
				next := 0
				var req Request
				var dst []byte
				b.ReportAllocs()
				for b.Loop() {
					next--
					body, _ := bson.Marshal(bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{
						{Key: "q", Value: bson.D{{Key: "_id", Value: next}}},
						{Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: bc.field, Value: "v"}}}}},
						{Key: "upsert", Value: true},
					}}}, {Key: "$db", Value: "b"}})
					if err := req.Reset(body, "", nil); err != nil {
						b.Fatal(err)
					}
					dst = Run(context.Background(), sess, &req, dst[:0])
					if _, ok := bson.Raw(dst).Lookup("upserted").ArrayOK(); !ok {
						b.Fatalf("upsert %d inserted nothing: %s", next, bson.Raw(dst))
					}
				}
				return
			}
			runUpdates(b, sess, bodies)
		})
	}
}

// BenchmarkRetryableUpdate is BenchmarkUpdateByID's $set by _id as a
// driver sends it with retryWrites (the default): with an lsid and a new
// txnNumber every command, so each one begins a new transaction number of
// its session, whose older number's statement record the write deletes
// (package session's "Stale keys from memory"). The WAL is synced on an
// interval, as there.
func BenchmarkRetryableUpdate(b *testing.B) { benchRetryableUpdate(b, 0, 0) }

// BenchmarkRetryableUpdateYCSB is BenchmarkRetryableUpdate on documents
// shaped as YCSB's (cairn bench's): ten fields of 100 characters beside
// field0 (about 1.1 KB), so that what an update copies, reads or writes
// per byte of its document weighs as it does under YCSB A and F.
func BenchmarkRetryableUpdateYCSB(b *testing.B) { benchRetryableUpdate(b, 10, 100) }

// updateBenchSession is a session on a standalone engine (100 ms sync
// interval) whose b.c holds 10,000 documents {_id: i, field0: "value"}
// with fields more fields of length characters (YCSB's shape for 10 and
// 100), inserted 1,000 a message (under the message size).
func updateBenchSession(b *testing.B, fields, length int) *Session {
	sess := testSession(b, engine.Options{SyncInterval: 100 * time.Millisecond})
	// No command is logged as slow, the load's inserts included: under
	// callgrind every command takes tens of times longer and passes slowms
	// now and then, and the log line's ext JSON of the command made the
	// instruction counts depend on the machine's load.
	sess.Env.Profiler.SetSlowMS(math.MaxInt32)
	docs := bson.A{}
	for i := range 10000 {
		d := bson.D{{Key: "_id", Value: i}, {Key: "field0", Value: "value"}}
		for f := range fields {
			d = append(d, bson.E{Key: fmt.Sprintf("field%d", f+1), Value: strings.Repeat(string(rune('a'+(i+f)%26)), length)})
		}
		docs = append(docs, d)
	}
	for at := 0; at < len(docs); at += 1000 {
		Run(context.Background(), sess, testRequest(b, "b", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs[at : at+1000]}}), nil)
	}
	return sess
}

// benchLsid is the benchmarks' session id.
var benchLsid = bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: []byte("0123456789abcdef")}}}

// benchRetryableUpdate runs BenchmarkRetryableUpdate on documents with
// fields more fields of length characters beside field0.
func benchRetryableUpdate(b *testing.B, fields, length int) {
	sess := updateBenchSession(b, fields, length)
	lsid := benchLsid
	// 64 documents, each set to alternate values (a no-op writes nothing);
	// the txnNumber is written into the body before each command.
	bodies := make([][]byte, 128)
	at := make([]int, len(bodies)) // where each body's txnNumber is
	for i := range bodies {
		bodies[i], _ = bson.Marshal(bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{
			{Key: "q", Value: bson.D{{Key: "_id", Value: (i % 64) * 97}}},
			{Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "field0", Value: bson.Binary{Data: []byte{byte(i / 64), 1, 2, 3}}}}}}},
		}}}, {Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(0)}, {Key: "$db", Value: "b"}})
		at[i] = bytes.Index(bodies[i], []byte("\x12txnNumber\x00")) + len("\x12txnNumber\x00")
	}
	var dst []byte
	var req Request
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		k := i % len(bodies)
		i++
		body := bodies[k]
		binary.LittleEndian.PutUint64(body[at[k]:], uint64(i)) // a new number each command
		if err := req.Reset(body, "", nil); err != nil {
			b.Fatal(err)
		}
		dst = Run(context.Background(), sess, &req, dst[:0])
		if n, _ := bson.Raw(dst).Lookup("nModified").AsInt64OK(); n != 1 {
			b.Fatalf("update %d modified %d: %s", i, n, bson.Raw(dst))
		}
	}
}

// BenchmarkReadModifyWriteYCSB is YCSB F's operation on a standalone
// server, as cairn bench's driver sends it: a find by _id (FindOne's
// shape) then a $set of one field of the same document, with an lsid and
// no txnNumber (the driver sends none to a standalone), on documents of
// BenchmarkRetryableUpdateYCSB's shape. One iteration is both commands:
// the update's read of its document in the pipeline follows a read that
// cached it (storage's "Group reads through the cache").
func BenchmarkReadModifyWriteYCSB(b *testing.B) {
	sess := updateBenchSession(b, 10, 100)
	lsid := benchLsid
	finds := make([][]byte, 128)
	updates := make([][]byte, 128)
	for i := range updates {
		id := (i % 64) * 97
		finds[i], _ = bson.Marshal(bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: id}}},
			{Key: "limit", Value: int64(1)}, {Key: "singleBatch", Value: true}, {Key: "lsid", Value: lsid}, {Key: "$db", Value: "b"}})
		updates[i], _ = bson.Marshal(bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{
			{Key: "q", Value: bson.D{{Key: "_id", Value: id}}},
			{Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "field0", Value: bson.Binary{Data: []byte{byte(i / 64), 1, 2, 3}}}}}}},
		}}}, {Key: "lsid", Value: lsid}, {Key: "$db", Value: "b"}})
	}
	var dst []byte
	var req Request
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		k := i % len(updates)
		i++
		if err := req.Reset(finds[k], "", nil); err != nil {
			b.Fatal(err)
		}
		dst = Run(context.Background(), sess, &req, dst[:0])
		if _, err := bson.Raw(dst).LookupErr("cursor", "firstBatch", "0", "field1"); err != nil {
			b.Fatalf("find %d: %s", i, bson.Raw(dst))
		}
		if err := req.Reset(updates[k], "", nil); err != nil {
			b.Fatal(err)
		}
		dst = Run(context.Background(), sess, &req, dst[:0])
		if n, _ := bson.Raw(dst).Lookup("nModified").AsInt64OK(); n != 1 {
			b.Fatalf("update %d modified %d: %s", i, n, bson.Raw(dst))
		}
	}
}

// BenchmarkUpdateYCSB is YCSB A's update on a standalone server as cairn
// bench's driver sends it: a $set of one field by _id with an lsid and no
// txnNumber (the driver sends none to a standalone), on documents of
// BenchmarkRetryableUpdateYCSB's shape, 64 of them set to alternate values
// (a no-op writes nothing). After the first round every document is in the
// document cache, as A's zipfian hot set is.
func BenchmarkUpdateYCSB(b *testing.B) {
	sess := updateBenchSession(b, 10, 100)
	bodies := make([][]byte, 128)
	for i := range bodies {
		bodies[i], _ = bson.Marshal(bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{
			{Key: "q", Value: bson.D{{Key: "_id", Value: (i % 64) * 97}}},
			{Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "field0", Value: bson.Binary{Data: []byte{byte(i / 64), 1, 2, 3}}}}}}},
		}}}, {Key: "lsid", Value: benchLsid}, {Key: "$db", Value: "b"}})
	}
	runUpdates(b, sess, bodies)
}

// runUpdates runs the update commands in turn, over and over, each of which
// must modify one document.
func runUpdates(b *testing.B, sess *Session, bodies [][]byte) {
	var dst []byte
	var req Request
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := req.Reset(bodies[i%len(bodies)], "", nil); err != nil {
			b.Fatal(err)
		}
		i++
		dst = Run(context.Background(), sess, &req, dst[:0])
		if n, _ := bson.Raw(dst).Lookup("nModified").AsInt64OK(); n != 1 {
			b.Fatalf("update %d modified %d: %s", i, n, bson.Raw(dst))
		}
	}
}
