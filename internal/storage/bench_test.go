package storage

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// The benchmarks compare Cairn's storage layer with raw Pebble writing and
// reading the same bytes in the same run; BENCHMARKS.md reports the ratios.
// Writers: 16 goroutines per core, like a busy server's connections.

const benchValueSize = 1024

func benchKey(dst []byte, n uint64) []byte {
	dst = Prefix(dst[:0], SpaceDocument, 1)
	return binary.BigEndian.AppendUint64(dst, n)
}

func BenchmarkInsert(b *testing.B) {
	value := make([]byte, benchValueSize)
	b.Run("engine=pebble", func(b *testing.B) {
		pdb := openRawPebble(b)
		var seq atomic.Uint64
		b.SetParallelism(16)
		b.SetBytes(benchValueSize)
		b.RunParallel(func(pb *testing.PB) {
			var key []byte
			for pb.Next() {
				key = benchKey(key, seq.Add(1))
				if err := pdb.Set(key, value, pebble.Sync); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	// sync=100ms is the interval mode: acknowledged once written to the
	// OS, synced every 100 ms and whenever the log starts a new 32 KiB block.
	for _, mode := range []struct {
		name  string
		every time.Duration
	}{{"engine=cairn", 0}, {"engine=cairn/sync=100ms", 100 * time.Millisecond}} {
		b.Run(mode.name, func(b *testing.B) { benchCairnInsert(b, value, mode.every) })
	}
}

func benchCairnInsert(b *testing.B, value []byte, every time.Duration) {
	db := openTest(b, Options{SyncInterval: every})
	var seq atomic.Uint64
	b.SetParallelism(16)
	b.SetBytes(benchValueSize)
	b.RunParallel(func(pb *testing.PB) {
		var key []byte
		for pb.Next() {
			key = benchKey(key, seq.Add(1))
			err := db.Write(func(tx *Txn) error {
				// An insert checks its key is free first, as _id uniqueness does.
				if ok, err := tx.Has(key); err != nil || ok {
					return fmt.Errorf("key taken: %v", err)
				}
				tx.Set(key, value)
				return nil
			})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}

const benchGetKeys = 100_000

func BenchmarkPointGet(b *testing.B) {
	value := make([]byte, benchValueSize)
	b.Run("engine=pebble", func(b *testing.B) {
		pdb := openRawPebble(b)
		batch := pdb.NewBatch()
		var key []byte
		for i := range uint64(benchGetKeys) {
			key = benchKey(key, i)
			_ = batch.Set(key, value, nil)
		}
		if err := batch.Commit(pebble.Sync); err != nil {
			b.Fatal(err)
		}
		_ = pdb.Flush()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			var key, dst []byte
			i := uint64(0)
			for pb.Next() {
				i = (i + 7919) % benchGetKeys
				key = benchKey(key, i)
				v, closer, err := pdb.Get(key)
				if err != nil {
					b.Error(err)
					return
				}
				dst = append(dst[:0], v...)
				closer.Close()
			}
		})
	})
	b.Run("engine=cairn", func(b *testing.B) {
		db := openTest(b, Options{})
		err := db.Write(func(tx *Txn) error {
			var key []byte
			for i := range uint64(benchGetKeys) {
				key = benchKey(key, i)
				tx.Set(key, value)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		_ = db.Flush()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			var key, dst []byte
			i := uint64(0)
			for pb.Next() {
				i = (i + 7919) % benchGetKeys
				key = benchKey(key, i)
				var ok bool
				var err error
				dst, ok, err = db.Get(dst[:0], key)
				if err != nil || !ok {
					b.Errorf("get: %v %v", ok, err)
					return
				}
			}
		})
	})
}

func openRawPebble(b *testing.B) *pebble.DB {
	cache := pebble.NewCache(64 << 20)
	defer cache.Unref()
	pdb, err := pebble.Open(b.TempDir(), &pebble.Options{Cache: cache, FormatMajorVersion: pebble.FormatNewest, Logger: quietLogger{discardLogger()}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = pdb.Close() })
	return pdb
}

// BenchmarkLogSyncs measures one writer's synced 1 KiB writes on the disk
// under t.TempDir, with the log written ahead (invariant "Log syncs
// overwrite") and without, one after the other in each round of -count;
// CAIRN_LOGAHEAD_REVERSE=1 swaps the order. Besides ns/op (the write and
// its sync) it reports the process's system CPU per write.
func BenchmarkLogSyncs(b *testing.B) {
	modes := []bool{false, true}
	if os.Getenv("CAIRN_LOGAHEAD_REVERSE") == "1" {
		modes = []bool{true, false}
	}
	value := make([]byte, benchValueSize)
	for _, ahead := range modes {
		b.Run(fmt.Sprintf("ahead=%v", ahead), func(b *testing.B) {
			logAhead = ahead
			defer func() { logAhead = true }()
			db := openTest(b, Options{})
			var key []byte
			var r0, r1 syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
			b.ResetTimer()
			for i := range b.N {
				key = benchKey(key, uint64(i))
				if err := db.Write(func(tx *Txn) error { tx.Set(key, value); return nil }); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
			sys := time.Duration(r1.Stime.Nano() - r0.Stime.Nano())
			b.ReportMetric(float64(sys.Microseconds())/float64(b.N), "sys-µs/op")
		})
	}
}

// BenchmarkAbsentKey compares the two reads of a key that is not stored,
// on a store compacted to its bottom level (BENCHMARKS.md "Session 13"):
// Pebble's Get, which skips the bottom level's bloom filters and reads a
// data block of the table whose range covers the key, and hasKey, Txn.Has's
// prefix seek through every level's filters (invariant "Absent keys stop
// at the filters"). present is hasKey on stored keys, which the filters
// cannot spare.
func BenchmarkAbsentKey(b *testing.B) {
	db := openTest(b, Options{})
	const n = 200_000
	key := func(dst []byte, i uint64) []byte { return benchKey(dst, i*2654435761%(1<<40)*2) } // even
	value := make([]byte, benchValueSize)
	for i := uint64(0); i < n; {
		if err := db.Write(func(tx *Txn) error {
			for end := min(i+2000, n); i < end; i++ {
				tx.Set(key(nil, i), value)
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.pdb.Compact(b.Context(), []byte{0}, []byte{0xff}, true); err != nil {
		b.Fatal(err)
	}
	batch := db.pdb.NewIndexedBatch()
	defer batch.Close()
	var k []byte
	absent := func(i uint64) []byte {
		k = key(k, i%n)
		k[len(k)-1] |= 1 // odd: not stored, inside the stored keys' range
		return k
	}
	b.Run("get", func(b *testing.B) {
		var i uint64
		for b.Loop() {
			if _, found, err := get(batch, nil, absent(i*7919)); err != nil || found {
				b.Fatal(found, err)
			}
			i++
		}
	})
	b.Run("has", func(b *testing.B) {
		var i uint64
		for b.Loop() {
			if found, err := hasKey(batch, absent(i*7919)); err != nil || found {
				b.Fatal(found, err)
			}
			i++
		}
	})
	b.Run("present", func(b *testing.B) {
		var i uint64
		for b.Loop() {
			if found, err := hasKey(batch, key(k, i*7919%n)); err != nil || !found {
				b.Fatal(found, err)
			}
			i++
		}
	})
}

// BenchmarkHasBatch is an insert batch's uniqueness check: a request asks
// Has of 1,000 absent keys spread over a store of 200,000 keys compacted
// to its bottom level plus 40,000 in the memtable, either seeking each
// (seek) or reading them first in one ascending pass (prefetch: PrefetchHas,
// invariant "Prefetched answers hold for the request"). One op is one
// request. checkBatch is where callgrind counts instructions
// (--toggle-collect='*storage.checkBatch'); the unflushed set's upkeep
// per key written is counted with --toggle-collect='*unflushed.note'
// --toggle-collect='*unflushed.prune'.
func BenchmarkHasBatch(b *testing.B) {
	db := openTest(b, Options{})
	key := func(dst []byte, i uint64) []byte { return benchKey(dst, i*2654435761%(1<<40)*2) } // even
	// Small values: callgrind runs the load too.
	value := make([]byte, 128)
	load := func(from, to uint64) {
		for i := from; i < to; {
			if err := db.Write(func(tx *Txn) error {
				for end := min(i+2000, to); i < end; i++ {
					tx.Set(key(nil, i), value)
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
		}
	}
	load(0, 200_000)
	if err := db.pdb.Compact(b.Context(), []byte{0}, []byte{0xff}, true); err != nil {
		b.Fatal(err)
	}
	load(200_000, 240_000)
	// One check first, outside checkBatch: it prunes the unflushed set of
	// the 200,000 keys the compaction flushed ("Unflushed documents
	// known"), a cost of the writes (a map delete per key written, as
	// its note is a map insert), not of the checks measured here.
	if err := db.Write(func(tx *Txn) error { _, err := tx.Has(key(nil, 1)); return err }); err != nil {
		b.Fatal(err)
	}
	const batch = 1000
	keys := make([][]byte, batch)
	var round uint64
	for _, prefetch := range []bool{false, true} {
		name := map[bool]string{false: "seek", true: "prefetch"}[prefetch]
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				for j := range keys {
					keys[j] = key(keys[j][:0], (round*batch+uint64(j))*7919%240_000)
					keys[j][len(keys[j])-1] |= 1 // odd: absent, among the stored keys
				}
				round++
				if err := db.Write(func(tx *Txn) error { return checkBatch(tx, keys, prefetch) }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

//go:noinline
func checkBatch(tx *Txn, keys [][]byte, prefetch bool) error {
	if prefetch {
		if err := tx.PrefetchHas(keys); err != nil {
			return err
		}
	}
	for _, k := range keys {
		found, err := tx.Has(k)
		if err != nil {
			return err
		}
		if found {
			return fmt.Errorf("key %x: found, want absent", k)
		}
	}
	return nil
}

// BenchmarkApplyThenRead: a member applies a replicated group of 8
// updates of documents that are cached (ApplyReplicated), then reads the
// 8 back by _id (DB.Get), as a primary's finds of the documents it
// updates do under YCSB-A: the apply's refresh against the reads' Pebble
// Gets it spares; reads=0 is the apply alone (a member nobody reads
// from). One iteration is one group and its reads; run it under
// callgrind with two iteration counts and take the difference
// (BENCHMARKS.md, "The apply refreshing cached documents").
func BenchmarkApplyThenRead(b *testing.B) {
	for _, reads := range []uint64{8, 0} {
		b.Run(fmt.Sprintf("reads=%d", reads), func(b *testing.B) { applyThenRead(b, reads) })
	}
}

func applyThenRead(b *testing.B, reads uint64) {
	const docs, group = 1000, 8
	db := openTest(b, Options{})
	value := make([]byte, benchValueSize)
	var key, dst []byte
	var err error
	if err := db.Write(func(tx *Txn) error {
		for i := range uint64(docs) {
			tx.Set(benchKey(nil, i), value)
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	for i := range uint64(docs) {
		if dst, _, err = db.Get(dst[:0], benchKey(key, i)); err != nil {
			b.Fatal(err)
		}
	}
	batch := db.pdb.NewBatch()
	defer batch.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for n := range uint64(b.N) {
		batch.Reset()
		for j := range uint64(group) {
			binary.BigEndian.PutUint64(value, n)
			_ = batch.Set(benchKey(key, (n*group+j)*7919%docs), value, nil)
		}
		if err := db.ApplyReplicated(n+1, batch.Repr()); err != nil {
			b.Fatal(err)
		}
		for j := range reads {
			if dst, _, err = db.Get(dst[:0], benchKey(key, (n*group+j)*7919%docs)); err != nil {
				b.Fatal(err)
			}
		}
	}
}
