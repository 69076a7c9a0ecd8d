package exec

import (
	"context"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/query"
	"github.com/cairndb/cairn/internal/update"
)

// Benchmarks of versioned collections against an unversioned one in the
// same run (BENCHMARKS.md): the latest read by _id, an update, and an
// as-of read of one document with 10,000 versions.

const benchDocs = 1000

func benchEngine(b *testing.B, versioned bool) (*Env, engine.Namespace) {
	b.Helper()
	// Writes are acknowledged before their sync (the interval mode), so
	// update timings are CPU, not the disk's fsync latency.
	eng, err := engine.Open(b.TempDir(), engine.Options{Logger: slog.New(slog.DiscardHandler), SyncInterval: 100 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = eng.Close() })
	ns := engine.Namespace{DB: "db", Coll: "c"}
	var opts bson.Raw
	if versioned {
		opts, _ = bson.Marshal(bson.D{{Key: "versioning", Value: bson.D{{Key: "enabled", Value: true}}}})
	}
	if err := eng.CreateCollection(ns, opts); err != nil {
		b.Fatal(err)
	}
	var docs []bsoncore.Document
	for i := range benchDocs {
		d, _ := bson.Marshal(bson.D{{Key: "_id", Value: i}, {Key: "attr1", Value: i % 10}, {Key: "n", Value: 0}, {Key: "pad", Value: "0123456789abcdef0123456789abcdef"}})
		docs = append(docs, d)
	}
	if _, err := eng.Insert(ns, docs, true); err != nil {
		b.Fatal(err)
	}
	return New(eng), ns
}

// cpuMeter reports the process's CPU time (user and system, every
// goroutine: the commit pipeline's too) per operation as cpu-ns/op.
type cpuMeter struct{ start time.Duration }

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU(b *testing.B) cpuMeter {
	b.ReportAllocs()
	return cpuMeter{cpuNow()}
}

func (m cpuMeter) stop(b *testing.B) {
	b.ReportMetric(float64(cpuNow()-m.start)/float64(b.N), "cpu-ns/op")
}

func idFilter(i int) bsoncore.Document {
	d, _ := bson.Marshal(bson.D{{Key: "_id", Value: i}})
	return d
}

func readOne(b *testing.B, x *Env, ns engine.Namespace, i int, at hlc.Timestamp) bsoncore.Document {
	sel, err := NewSelection(ns, idFilter(i), query.Options{})
	if err != nil {
		b.Fatal(err)
	}
	sel.AsOf = at
	src, err := x.Open(context.Background(), sel, Run)
	if err != nil {
		b.Fatal(err)
	}
	d, err := src.Next()
	if err != nil || d == nil {
		b.Fatalf("read %d at %v: %v %v", i, at, d, err)
	}
	_ = src.Close()
	return d
}

func BenchmarkVersionedLatestByID(b *testing.B) {
	for _, v := range []struct {
		name      string
		versioned bool
	}{{"unversioned", false}, {"versioned", true}} {
		b.Run(v.name, func(b *testing.B) {
			x, ns := benchEngine(b, v.versioned)
			m := startCPU(b)
			i := 0
			for b.Loop() {
				readOne(b, x, ns, i%benchDocs, 0)
				i += 7
			}
			m.stop(b)
		})
	}
}

// BenchmarkVersionedUpdate updates documents of an unversioned and a
// versioned collection, each side in its own engine, in the order
// unversioned, versioned, versioned, unversioned (so neither always runs
// first). Each side's CPU includes flushing what it wrote and waiting for
// the compactions that follows (settle): a versioned update's extra cost is
// mostly Pebble's work on the history it writes, which a run shorter than
// a memtable would otherwise never pay. The in-run ratio of BenchmarkVersionedRatio
// cannot charge that background work to the side that caused it.
//
//	go test ./internal/exec -run XXX -bench VersionedUpdate -benchtime 50000x -count 2
func BenchmarkVersionedUpdate(b *testing.B) {
	inc, _ := bson.Marshal(bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
	for _, versioned := range []bool{false, true, true, false} {
		name := "unversioned"
		if versioned {
			name = "versioned"
		}
		b.Run(name, func(b *testing.B) {
			x, ns := benchEngine(b, versioned)
			settle(b, x)
			mod, err := update.ParseDocument(inc, update.Options{})
			if err != nil {
				b.Fatal(err)
			}
			m := startCPU(b)
			i := 0
			for b.Loop() {
				sel, _ := NewSelection(ns, idFilter(i%benchDocs), query.Options{})
				if _, err := x.Update(context.Background(), Update{Sel: sel, Mod: mod}); err != nil {
					b.Fatal(err)
				}
				i += 7
			}
			settle(b, x)
			m.stop(b)
		})
	}
}

// BenchmarkVersionedAsOf reads one document with 10,000 versions as of
// times spread over its history, against the latest read of it.
func BenchmarkVersionedAsOf(b *testing.B) {
	x, ns, times := tenThousandVersions(b)
	b.Run("latest", func(b *testing.B) {
		m := startCPU(b)
		for b.Loop() {
			readOne(b, x, ns, 5, 0)
		}
		m.stop(b)
	})
	b.Run("asof-10k-versions", func(b *testing.B) {
		m := startCPU(b)
		i := 0
		for b.Loop() {
			times.read(b, x, ns, i)
			i++
		}
		m.stop(b)
	})
}

// asOfTimes are cluster times spread over a document's history, each with
// the value of n the document had then.
type asOfTimes struct {
	at []hlc.Timestamp
	n  []int32
}

// read reads document 5 as of the i-th time (cycling) and checks it.
func (t asOfTimes) read(b *testing.B, x *Env, ns engine.Namespace, i int) {
	k := (i * 37) % len(t.at)
	if d := readOne(b, x, ns, 5, t.at[k]); d.Lookup("n").Int32() != t.n[k] {
		b.Fatalf("as of %v: %s, want n %d", t.at[k], d, t.n[k])
	}
}

// tenThousandVersions gives document 5 of a versioned benchEngine 10,000
// versions (n 0…9999) and returns 100 times spread over them.
func tenThousandVersions(b *testing.B) (*Env, engine.Namespace, asOfTimes) {
	x, ns := benchEngine(b, true)
	inc, _ := bson.Marshal(bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
	mod, _ := update.ParseDocument(inc, update.Options{})
	var t asOfTimes
	for k := 1; k < 10000; k++ {
		sel, _ := NewSelection(ns, idFilter(5), query.Options{})
		if _, err := x.Update(context.Background(), Update{Sel: sel, Mod: mod}); err != nil {
			b.Fatal(err)
		}
		if k%100 == 50 {
			t.at = append(t.at, x.eng.Storage().LastCommitted())
			t.n = append(t.n, int32(k))
		}
	}
	settle(b, x)
	return x, ns, t
}

// settle flushes the engine's memtable and waits for its compactions, so
// that the background work of a benchmark's setup is not counted in the
// CPU of the operations it measures.
func settle(b *testing.B, x *Env) {
	db := x.eng.Storage()
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); db.Pebble().Metrics().Compact.NumInProgress > 0; {
		if time.Now().After(deadline) {
			b.Fatal("compactions still running after a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkVersionedLatestWhere is the issue's "latest version of every
// document where attr1 = x", scaled down (5,000 documents of 10 versions
// each): a find over an index of the versioned collection, against the
// seed's schema 1 (every version a document of an unversioned collection,
// the latest found by $sort, $group $first, $match).
func BenchmarkVersionedLatestWhere(b *testing.B) {
	const docs, versions = 5000, 10
	ctx := context.Background()
	x, ns := benchEngine(b, true)
	if _, err := x.eng.DropCollection(ns); err != nil {
		b.Fatal(err)
	}
	opts, _ := bson.Marshal(bson.D{{Key: "versioning", Value: bson.D{{Key: "enabled", Value: true}}}})
	if err := x.eng.CreateCollection(ns, opts); err != nil {
		b.Fatal(err)
	}
	spec, _ := bson.Marshal(bson.D{{Key: "key", Value: bson.D{{Key: "attr1", Value: 1}}}, {Key: "name", Value: "attr1_1"}})
	if _, err := x.eng.CreateIndexes(ctx, ns, []bsoncore.Document{spec}); err != nil {
		b.Fatal(err)
	}
	flat := engine.Namespace{DB: "db", Coll: "flat"}
	var batch, flatBatch []bsoncore.Document
	for id := range docs {
		d, _ := bson.Marshal(bson.D{{Key: "_id", Value: id}, {Key: "attr1", Value: (id + 1) % 10}})
		batch = append(batch, d)
	}
	if _, err := x.eng.Insert(ns, batch, true); err != nil {
		b.Fatal(err)
	}
	for v := 2; v <= versions; v++ {
		for id := range docs {
			d, _ := bson.Marshal(bson.D{{Key: "_id", Value: id}, {Key: "attr1", Value: (id + v) % 10}})
			if _, err := x.eng.Replace(ns, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(id))}, d); err != nil {
				b.Fatal(err)
			}
		}
	}
	for id := range docs {
		for v := 1; v <= versions; v++ {
			d, _ := bson.Marshal(bson.D{{Key: "docId", Value: id}, {Key: "v", Value: v}, {Key: "attr1", Value: (id + v) % 10}})
			flatBatch = append(flatBatch, d)
		}
	}
	if _, err := x.eng.Insert(flat, flatBatch, true); err != nil {
		b.Fatal(err)
	}
	want := docs / 10
	filter, _ := bson.Marshal(bson.D{{Key: "attr1", Value: 3}})
	b.Run("versioned-find", func(b *testing.B) {
		m := startCPU(b)
		for b.Loop() {
			sel, _ := NewSelection(ns, filter, query.Options{})
			src, err := x.Open(ctx, sel, Run)
			if err != nil {
				b.Fatal(err)
			}
			if n := drainCount(b, src); n != want {
				b.Fatalf("%d documents, want %d", n, want)
			}
		}
		m.stop(b)
	})
	var pipeline []bsoncore.Document
	for _, st := range []bson.D{
		{{Key: "$sort", Value: bson.D{{Key: "docId", Value: 1}, {Key: "v", Value: -1}}}},
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$docId"}, {Key: "latest", Value: bson.D{{Key: "$first", Value: "$$ROOT"}}}}}},
		{{Key: "$match", Value: bson.D{{Key: "latest.attr1", Value: 3}}}},
	} {
		d, _ := bson.Marshal(st)
		pipeline = append(pipeline, d)
	}
	b.Run("schema1-aggregate", func(b *testing.B) {
		m := startCPU(b)
		for b.Loop() {
			src, err := x.Aggregate(ctx, Aggregate{NS: flat, Stages: pipeline})
			if err != nil {
				b.Fatal(err)
			}
			if n := drainCount(b, src); n != want {
				b.Fatalf("%d documents, want %d", n, want)
			}
		}
		m.stop(b)
	})
}

func drainCount(b *testing.B, src interface {
	Next() (bsoncore.Document, error)
	Close() error
}) int {
	n := 0
	for {
		d, err := src.Next()
		if err != nil {
			b.Fatal(err)
		}
		if d == nil {
			_ = src.Close()
			return n
		}
		n++
	}
}

// abbaBlock is how many operations one side runs before the other takes
// over in abba.
const abbaBlock = 500

// abba runs b.N operations of each of two sides in alternating blocks,
// ordered A B B A A B B A…, so that both sides see the same machine state
// (load, heap, the other engine's background work) and neither always runs
// first, and reports each side's process CPU per operation and their ratio
// (the targets are ratios measured in the same run). ns/op is the
// time of one operation of each side.
func abba(b *testing.B, base, other func(i int)) {
	b.ReportAllocs()
	var cpu [2]time.Duration
	sides := [2]func(int){base, other}
	b.ResetTimer()
	for done, blk := 0, 0; done < b.N; blk++ {
		n := min(abbaBlock, b.N-done)
		first := 0
		if blk%4 == 1 || blk%4 == 2 {
			first = 1
		}
		for _, s := range []int{first, 1 - first} {
			start := cpuNow()
			for i := done; i < done+n; i++ {
				sides[s](i)
			}
			cpu[s] += cpuNow() - start
		}
		done += n
	}
	b.StopTimer()
	b.ReportMetric(float64(cpu[0])/float64(b.N), "base-cpu-ns/op")
	b.ReportMetric(float64(cpu[1])/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "ratio")
}

// BenchmarkVersionedRatio measures the three per-operation targets
// as same-run ratios (abba): the latest read by _id and an update of a
// versioned collection against an unversioned one, and an as-of read of a
// document with 10,000 versions (at times spread over its history) against
// the latest read of it.
//
//	go test ./internal/exec -run XXX -bench VersionedRatio -benchtime 20000x -count 3
func BenchmarkVersionedRatio(b *testing.B) {
	ctx := context.Background()
	inc, _ := bson.Marshal(bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
	mod, err := update.ParseDocument(inc, update.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("op=latest", func(b *testing.B) {
		ux, uns := benchEngine(b, false)
		vx, vns := benchEngine(b, true)
		settle(b, ux)
		settle(b, vx)
		abba(b, func(i int) { readOne(b, ux, uns, (i*7)%benchDocs, 0) },
			func(i int) { readOne(b, vx, vns, (i*7)%benchDocs, 0) })
	})
	b.Run("op=update", func(b *testing.B) {
		ux, uns := benchEngine(b, false)
		vx, vns := benchEngine(b, true)
		upd := func(x *Env, ns engine.Namespace) func(int) {
			return func(i int) {
				sel, _ := NewSelection(ns, idFilter((i*7)%benchDocs), query.Options{})
				if _, err := x.Update(ctx, Update{Sel: sel, Mod: mod}); err != nil {
					b.Fatal(err)
				}
			}
		}
		abba(b, upd(ux, uns), upd(vx, vns))
	})
	b.Run("op=asof_10k_versions", func(b *testing.B) {
		x, ns, times := tenThousandVersions(b)
		abba(b, func(int) { readOne(b, x, ns, 5, 0) }, func(i int) { times.read(b, x, ns, i) })
	})
}
