package engine

import (
	"log/slog"
	"strconv"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/invariants"
)

// cpuNow is the process's user+system CPU time.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTxn compares a transaction with the same work done by single
// writes and plain reads, in CPU per operation (cpu-ns/op, the process's
// CPU time: the pipeline and completer goroutines included), acknowledged
// without waiting for a sync so the figure is CPU rather than fsync:
//   - update2/txn: a transaction of two updates (two statements, one
//     commit); update2/single: two single-document updates.
//   - read/txn-N: a read-only snapshot transaction of N point reads (its
//     commit writes nothing); read/plain-N: N plain point reads.
func BenchmarkTxn(b *testing.B) {
	e, err := Open(b.TempDir(), Options{Logger: slog.New(slog.DiscardHandler), SyncInterval: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ns := Namespace{"bench", "txn"}
	const docs = 1000
	var batch []bsoncore.Document
	for i := range docs {
		d, _ := bson.Marshal(bson.D{{Key: "_id", Value: i}, {Key: "n", Value: 0}})
		batch = append(batch, d)
	}
	if _, err := e.Insert(ns, batch, true); err != nil {
		b.Fatal(err)
	}
	ids := make([]bsoncore.Value, docs)
	for i := range ids {
		ids[i] = bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(i))}
	}
	n := 0
	bump := func(tx *Txn, i int) {
		n++
		next, _ := bson.Marshal(bson.D{{Key: "_id", Value: i}, {Key: "n", Value: n}})
		res, err := e.ModifyWith(ns, ids[i:i+1], ModifyOptions{Ordered: true, Txn: tx}, func(int, bsoncore.Document) (Action, error) {
			return Action{Replace: next}, nil
		})
		if err != nil || len(res.Errors) > 0 || res.Modified != 1 {
			b.Fatalf("update: %+v %v", res, err)
		}
	}
	runIn := func(b *testing.B, name string, op func(i int)) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			start, i := cpuNow(), 0
			for b.Loop() {
				op(i)
				i++
			}
			b.ReportMetric(float64(cpuNow()-start)/float64(i), "cpu-ns/op")
		})
	}
	run := func(name string, op func(i int)) { runIn(b, name, op) }
	// prev is the last transaction, which the next reuses as a session's
	// does (BeginReusing).
	var prev *Txn
	run("update2/txn", func(i int) {
		tx := e.BeginReusing(prev)
		bump(tx, (2*i)%docs)
		bump(tx, (2*i+1)%docs)
		if _, err := tx.Commit(nil); err != nil {
			b.Fatal(err)
		}
		prev = tx
	})
	run("update2/single", func(i int) {
		bump(nil, (2*i)%docs)
		bump(nil, (2*i+1)%docs)
	})
	readTxn := func(reads int) func(i int) {
		return func(i int) {
			tx := e.BeginReusing(prev)
			for k := range reads {
				if _, found, err := e.GetIn(tx, nil, ns, ids[(i*reads+k)%docs]); !found || err != nil {
					b.Fatal(found, err)
				}
			}
			if _, err := tx.Commit(nil); err != nil {
				b.Fatal(err)
			}
			prev = tx
		}
	}
	readPlain := func(reads int) func(i int) {
		return func(i int) {
			for k := range reads {
				if _, found, err := e.Get(nil, ns, ids[(i*reads+k)%docs]); !found || err != nil {
					b.Fatal(found, err)
				}
			}
		}
	}
	for _, reads := range []int{1, 10} {
		run("read/txn-"+strconv.Itoa(reads), readTxn(reads))
		run("read/plain-"+strconv.Itoa(reads), readPlain(reads))
	}
	// stored/: the same reads once the documents are flushed from the
	// memtable to a table. A memtable's skiplist takes random heights, so
	// the instructions a read costs there differ from process to process;
	// a table's do not: callgrind's per-operation counts of two binaries
	// (BENCHMARKS.md) compare these.
	if err := e.Storage().Flush(); err != nil {
		b.Fatal(err)
	}
	run("stored/txn-1", readTxn(1))
	run("stored/plain-1", readPlain(1))
	// versions/: ten reads once every document has 40 newer versions
	// spread over several memtables (what update2 leaves behind after
	// 20,000 transactions), written in 40 requests of 1,000 updates —
	// only when versions/ runs (the whole-process instruction counts of
	// the others subtract two runs' totals).
	b.Run("versions", func(b *testing.B) {
		for v := range 40 {
			next := make([]bsoncore.Document, docs)
			for i := range next {
				next[i], _ = bson.Marshal(bson.D{{Key: "_id", Value: i}, {Key: "n", Value: -v}})
			}
			if _, err := e.Modify(ns, ids, true, func(i int, _ bsoncore.Document) (Action, error) {
				return Action{Replace: next[i]}, nil
			}); err != nil {
				b.Fatal(err)
			}
		}
		runIn(b, "txn-10", readTxn(10))
		runIn(b, "plain-10", readPlain(10))
	})
}

// TestTxnReadAllocs bounds what a read-only transaction of one point read
// (BeginReusing, GetIn, Commit: BenchmarkTxn's read/txn-1, as a session
// runs one after another) allocates beyond the plain point read it wraps
// (Get): nothing but its key (below) — the transaction object is the
// session's last one (BeginReusing), the snapshot is shared while
// nothing changed (storage's shared views), and the commit makes no
// request. Each allocation is garbage paid for per transaction (issue
// 19's ≤ 1.1× of a plain read). A first transaction allocates its object
// (Begin: one allocation for the engine's and storage's, DB.BeginIn).
// Since session 19 a plain read that hits the document cache keeps its key
// on the stack (keystring.AppendScalar, storage's GetDocument) and
// allocates nothing, where a transaction's read hands its key to Pebble's
// snapshot, which moves it to the heap: one allocation more, the key's.
func TestTxnReadAllocs(t *testing.T) {
	const extra = 1
	e, err := Open(t.TempDir(), Options{Logger: slog.New(slog.DiscardHandler), SyncInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ns := Namespace{"bench", "txn"}
	d, _ := bson.Marshal(bson.D{{Key: "_id", Value: 7}, {Key: "n", Value: 1}})
	if _, err := e.Insert(ns, []bsoncore.Document{d}, true); err != nil {
		t.Fatal(err)
	}
	id := bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 7)}
	buf := make([]byte, 0, 64)
	plain := testing.AllocsPerRun(1000, func() {
		if _, found, err := e.Get(buf[:0], ns, id); !found || err != nil {
			t.Fatal(found, err)
		}
	})
	var prev *Txn
	txn := testing.AllocsPerRun(1000, func() {
		tx := e.BeginReusing(prev)
		if _, found, err := e.GetIn(tx, buf[:0], ns, id); !found || err != nil {
			t.Fatal(found, err)
		}
		if _, err := tx.Commit(nil); err != nil {
			t.Fatal(err)
		}
		prev = tx
	})
	if tx := e.BeginReusing(prev); tx != prev {
		t.Error("BeginReusing did not reuse an ended transaction nothing reads")
	} else {
		tx.Abort()
	}
	// One whose iterator is still open is not reused ("Readers outlive
	// the end").
	tx := e.Begin()
	r, err := e.NewReaderIn(tx, ns)
	if err != nil {
		t.Fatal(err)
	}
	it, err := r.Docs(KeyRange{}, false)
	if err != nil {
		t.Fatal(err)
	}
	tx.Abort()
	if next := e.BeginReusing(tx); next == tx {
		t.Error("BeginReusing reused a transaction whose iterator is open")
	} else {
		next.Abort()
	}
	_ = it.Close()
	_ = r.Close()
	if again := e.BeginReusing(tx); again != tx {
		t.Error("BeginReusing did not reuse a transaction once its last iterator closed")
	} else {
		again.Abort()
	}
	switch {
	case raceEnabled || invariants.Enabled:
		// Pebble's pools drop items under the race detector, and the
		// invariants build records where each transaction began.
		t.Logf("allocations not compared in this build: transaction %.1f, plain read %.1f", txn, plain)
	case txn > plain+extra:
		t.Errorf("a read-only transaction of one point read allocates %.1f times, the plain read %.1f: want at most %d more", txn, plain, extra)
	default:
		t.Logf("transaction %.1f allocations, plain read %.1f (at most %d more)", txn, plain, extra)
	}
}

// TestTxnUpdateAllocs bounds what a transaction of two updates
// (BeginReusing, two ModifyWith statements, Commit: BenchmarkTxn's
// update2/txn, as a session runs one after another) allocates beyond the
// same two updates run alone (update2/single). What remains is the
// transaction's snapshot (Pebble's NewSnapshot and, at its close, its
// compaction check: about 9), the commit's pipeline group (3), the
// statements' point reads on the snapshot and the claimed keys' strings:
// the statements' own memory (their storage Txn, the own-writes map and
// entries, the changes' buffer, the request functions) is the session's
// last transaction's (storage.Scratch, txnMemory). Before that (session
// 10) the transaction allocated 140 times against 63.
func TestTxnUpdateAllocs(t *testing.T) {
	const extra = 22
	e, err := Open(t.TempDir(), Options{Logger: slog.New(slog.DiscardHandler), SyncInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ns := Namespace{"bench", "txn"}
	var ids []bsoncore.Value
	for i := range 2 {
		d, _ := bson.Marshal(bson.D{{Key: "_id", Value: i}, {Key: "n", Value: 0}})
		if _, err := e.Insert(ns, []bsoncore.Document{d}, true); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(i))})
	}
	docs := [2][2]bsoncore.Document{}
	for i := range 2 {
		for v := range 2 {
			docs[i][v], _ = bson.Marshal(bson.D{{Key: "_id", Value: i}, {Key: "n", Value: v + 1}})
		}
	}
	n := 0
	// The callback's closure, made once: what each run allocates is the
	// engine's.
	var next bsoncore.Document
	replace := func(int, bsoncore.Document) (Action, error) { return Action{Replace: next}, nil }
	update := func(tx *Txn, i int) {
		next = docs[i][n%2]
		res, err := e.ModifyWith(ns, ids[i:i+1], ModifyOptions{Ordered: true, Txn: tx}, replace)
		if err != nil || len(res.Errors) > 0 || res.Modified != 1 {
			t.Fatalf("update: %+v %v", res, err)
		}
	}
	single := testing.AllocsPerRun(200, func() {
		n++
		update(nil, 0)
		update(nil, 1)
	})
	var prev *Txn
	txn := testing.AllocsPerRun(200, func() {
		n++
		tx := e.BeginReusing(prev)
		update(tx, 0)
		update(tx, 1)
		if _, err := tx.Commit(nil); err != nil {
			t.Fatal(err)
		}
		prev = tx
	})
	switch {
	case raceEnabled || invariants.Enabled:
		t.Logf("allocations not compared in this build: transaction %.1f, two updates %.1f", txn, single)
	case txn > single+extra:
		t.Errorf("a transaction of two updates allocates %.1f times, the two updates alone %.1f: want at most %d more", txn, single, extra)
	default:
		t.Logf("transaction %.1f allocations, two updates alone %.1f (at most %d more)", txn, single, extra)
	}
}
