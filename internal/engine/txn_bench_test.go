package engine

import (
	"log/slog"
	"strconv"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
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
	run := func(name string, op func(i int)) {
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
	run("update2/txn", func(i int) {
		tx := e.Begin()
		bump(tx, (2*i)%docs)
		bump(tx, (2*i+1)%docs)
		if _, err := tx.Commit(nil); err != nil {
			b.Fatal(err)
		}
	})
	run("update2/single", func(i int) {
		bump(nil, (2*i)%docs)
		bump(nil, (2*i+1)%docs)
	})
	for _, reads := range []int{1, 10} {
		run("read/txn-"+strconv.Itoa(reads), func(i int) {
			tx := e.Begin()
			for k := range reads {
				if _, found, err := e.GetIn(tx, nil, ns, ids[(i*reads+k)%docs]); !found || err != nil {
					b.Fatal(found, err)
				}
			}
			if _, err := tx.Commit(nil); err != nil {
				b.Fatal(err)
			}
		})
		run("read/plain-"+strconv.Itoa(reads), func(i int) {
			for k := range reads {
				if _, found, err := e.Get(nil, ns, ids[(i*reads+k)%docs]); !found || err != nil {
					b.Fatal(found, err)
				}
			}
		})
	}
}
