package commands

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/invariants"
)

// txnReads sets up issue 19's read-only transaction at the command
// boundary on a primary (fakeMember): txn runs transaction number n as a
// driver sends it — a find by _id carrying lsid, txnNumber, autocommit:
// false, startTransaction and readConcern snapshot, then
// commitTransaction — and plain runs the same find with the lsid alone
// (BenchmarkPointRead's). Both check the reply and fail tb on an error.
func txnReads(tb testing.TB) (txn func(n int64), plain func(), env *Env) {
	tb.Helper()
	sess := testSession(tb, engine.Options{})
	m := &fakeMember{}
	m.set(true, nil)
	sess.Env.SetReplicaSet(m)
	if reply := Run(context.Background(), sess, testRequest(tb, "b", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 42}, {Key: "n", Value: 1}}}}}), nil); reply.Lookup("ok").Double() != 1 {
		tb.Fatal(reply)
	}
	uuid := make([]byte, 16)
	uuid[6], uuid[8] = 0x40, 0x80
	lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: uuid}}}
	// A txnNumber no other field's bytes contain, patched in place per
	// transaction.
	const mark = int64(0x5a5a5a5a5a5a5a5a)
	marshal := func(cmd bson.D) ([]byte, int) {
		body, err := bson.Marshal(cmd)
		if err != nil {
			tb.Fatal(err)
		}
		var m [8]byte
		binary.LittleEndian.PutUint64(m[:], uint64(mark))
		return body, bytes.Index(body, m[:]) // -1: no txnNumber
	}
	find := bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 42}}},
		{Key: "limit", Value: 1}, {Key: "singleBatch", Value: true}, {Key: "lsid", Value: lsid}}
	start, startAt := marshal(append(find[:len(find):len(find)],
		bson.E{Key: "txnNumber", Value: mark}, bson.E{Key: "autocommit", Value: false}, bson.E{Key: "startTransaction", Value: true},
		bson.E{Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}}}, bson.E{Key: "$db", Value: "b"}))
	commit, commitAt := marshal(bson.D{{Key: "commitTransaction", Value: 1}, {Key: "lsid", Value: lsid},
		{Key: "txnNumber", Value: mark}, {Key: "autocommit", Value: false}, {Key: "$db", Value: "admin"}})
	plainBody, _ := marshal(append(find, bson.E{Key: "$db", Value: "b"}))
	s := &Session{Env: sess.Env, ConnID: 1}
	var req Request
	var dst bsoncore.Document
	run := func(body []byte) {
		if err := req.Reset(body, "", nil); err != nil {
			tb.Fatal(err)
		}
		dst = Run(context.Background(), s, &req, dst[:0])
		if ok, _ := dst.Lookup("ok").AsFloat64OK(); ok != 1 {
			tb.Fatalf("%s: %v", req.Name, dst)
		}
	}
	read := func(body []byte) {
		run(body)
		if v, err := dst.LookupErr("cursor", "firstBatch", "0", "n"); err != nil || v.Int32() != 1 {
			tb.Fatalf("the read found no document: %v", dst)
		}
	}
	txn = func(n int64) {
		binary.LittleEndian.PutUint64(start[startAt:], uint64(n))
		binary.LittleEndian.PutUint64(commit[commitAt:], uint64(n))
		read(start)
		run(commit)
	}
	return txn, func() { read(plainBody) }, sess.Env
}

// BenchmarkTxnPointRead compares issue 19's read-only transaction of one
// point read at the command boundary (txnReads: two commands, the find
// that starts it and commitTransaction) with the plain find, per
// transaction and per read, on one reused Request and Session as a
// connection serves them:
// `go test -run XXX -bench TxnPointRead -benchmem ./internal/commands/`.
func BenchmarkTxnPointRead(b *testing.B) {
	txn, plain, _ := txnReads(b)
	n := int64(0)
	b.Run("txn", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n++
			txn(n)
		}
	})
	b.Run("plain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			plain()
		}
	})
}

// TestTxnPointReadAllocs bounds the allocations of a read-only transaction
// of one point read through the command path (txnReads' two commands)
// against the plain find's (TestPointReadAllocs'): each is garbage the
// collector pays for per transaction. 4 more in session 9 (from 5: the
// readConcern's elements are read without a slice); 2 in session 10 (the
// readConcern level and commitTransaction's $db "admin" are constants, not
// strings made of their bytes): the second command's own (its operation
// entry among them); the transaction object itself is the session's last
// one (engine.BeginReusing), its lsid document built once. The plain find
// is measured on the general path (Env.noExpress), the one the
// transaction's find takes: the bound is on what the transaction adds, not
// on what the express path saves (TestPointReadAllocs).
func TestTxnPointReadAllocs(t *testing.T) {
	const extra = 2
	txn, plain, env := txnReads(t)
	n := int64(0)
	inTxn := testing.AllocsPerRun(500, func() { n++; txn(n) })
	env.noExpress = true
	alone := testing.AllocsPerRun(500, plain)
	env.noExpress = false
	if raceEnabled || invariants.Enabled {
		// Pebble's pools drop items under the race detector, and the
		// invariants build records where each transaction began.
		t.Logf("allocations not compared in this build: transaction %.1f, plain find %.1f", inTxn, alone)
		return
	}
	if inTxn > alone+extra {
		t.Errorf("a transaction of one point read allocates %.1f times, the plain find %.1f: want at most %d more", inTxn, alone, extra)
	} else {
		t.Logf("transaction %.1f allocations, plain find %.1f (at most %d more)", inTxn, alone, extra)
	}
}
