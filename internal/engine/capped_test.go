package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func cappedOpts(size, max int64) bson.Raw {
	d := bson.D{{Key: "capped", Value: true}, {Key: "size", Value: size}}
	if max > 0 {
		d = append(d, bson.E{Key: "max", Value: max})
	}
	raw, _ := bson.Marshal(d)
	return raw
}

// naturalIDs reads ns in natural order and returns each document's id
// field n, and the count and size the meta record claims.
func naturalIDs(t *testing.T, e *Engine, ns Namespace) (ids []int32, bytes int) {
	t.Helper()
	r, err := e.NewReader(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c, err := r.Natural(0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	last := uint64(0)
	for c.Next() {
		if c.Seq() <= last {
			t.Fatalf("natural order: seq %d after %d", c.Seq(), last)
		}
		last = c.Seq()
		d, _ := c.Value()
		ids = append(ids, d.Lookup("_id").Int32())
		bytes += len(d)
	}
	return ids, bytes
}

// TestCappedLimits checks "Capped within limits" against a model queue:
// random batches of documents of random sizes, into collections with a
// size cap, a count cap or both, with and without a secondary index (whose
// entries must follow the evictions), with deletes and size-changing
// replacements between the batches (both allowed in MongoDB 7.0).
func TestCappedLimits(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	for _, tc := range []struct {
		name      string
		size, max int64
		indexed   bool
	}{
		{"size only", 2000, 0, true},
		{"max only", 1 << 20, 7, true},
		{"both", 1500, 20, true},
		{"tiny", 100, 0, true},
		{"both, no index", 1500, 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := openEngine(t, "")
			ns := Namespace{"db", "c"}
			if err := e.CreateCollection(ns, cappedOpts(tc.size, tc.max)); err != nil {
				t.Fatal(err)
			}
			if tc.indexed {
				if _, err := e.CreateIndexes(context.Background(), ns, []bsoncore.Document{mustRaw(bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}})}); err != nil {
					t.Fatal(err)
				}
			}
			type doc struct {
				id   int32
				size int
			}
			var model []doc
			total := func() (n int) {
				for _, m := range model {
					n += m.size
				}
				return n
			}
			idVal := func(id int32) bsoncore.Value {
				return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, id)}
			}
			payload := func() bson.D {
				return bson.D{{Key: "a", Value: rng.Int32N(5)}, {Key: "p", Value: strings.Repeat("x", rng.IntN(60))}}
			}
			next := int32(0)
			for round := 0; round < 60; round++ {
				var batch []bsoncore.Document
				for range 1 + rng.IntN(8) {
					d := mustRaw(append(bson.D{{Key: "_id", Value: next}}, payload()...))
					batch = append(batch, d)
					model = append(model, doc{next, len(d)})
					for len(model) > 1 && (int64(total()) > tc.size || tc.max > 0 && int64(len(model)) > tc.max) {
						model = model[1:]
					}
					next++
				}
				res, err := e.Insert(ns, batch, true)
				if err != nil || len(res.WriteErrors) > 0 {
					t.Fatalf("insert: %v %v", err, res.WriteErrors)
				}
				switch k := rng.IntN(3); {
				case k == 0 && len(model) > 0:
					i := rng.IntN(len(model))
					if ok, err := e.Delete(ns, idVal(model[i].id)); err != nil || !ok {
						t.Fatalf("delete %d: %v %v", model[i].id, ok, err)
					}
					model = append(model[:i], model[i+1:]...)
				case k == 1 && len(model) > 0:
					i := rng.IntN(len(model))
					d := mustRaw(append(bson.D{{Key: "_id", Value: model[i].id}}, payload()...))
					if _, err := e.Replace(ns, idVal(model[i].id), d); err != nil {
						t.Fatalf("replace %d: %v", model[i].id, err)
					}
					model[i].size = len(d)
				}
				ids, bytes := naturalIDs(t, e, ns)
				if len(ids) != len(model) || bytes != total() {
					t.Fatalf("round %d: %d documents of %d bytes, model %d of %d", round, len(ids), bytes, len(model), total())
				}
				for i := range ids {
					if ids[i] != model[i].id {
						t.Fatalf("round %d: natural order %v, model %v", round, ids, model)
					}
				}
			}
			if err := e.CheckIndexes(ns); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCappedDeleteUpdate: deletes and updates (allowed in MongoDB 7.0)
// keep the counts, so the next insert evicts exactly what the limits say,
// also after the engine reopens.
func TestCappedDeleteUpdate(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir)
	ns := Namespace{"db", "c"}
	if err := e.CreateCollection(ns, cappedOpts(1<<20, 3)); err != nil {
		t.Fatal(err)
	}
	for i := range int32(3) {
		if _, err := e.Insert(ns, []bsoncore.Document{mustRaw((bson.D{{Key: "_id", Value: i}}))}, true); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := e.Delete(ns, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 1)}); err != nil || !ok {
		t.Fatalf("delete: %v %v", ok, err)
	}
	if _, err := e.Replace(ns, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 0)}, mustRaw((bson.D{{Key: "p", Value: strings.Repeat("y", 100)}}))); err != nil {
		t.Fatal(err)
	}
	// Two documents remain; max 3 lets one more in without eviction, the
	// next evicts the oldest (0), and the delete's gap (1) is skipped.
	for _, id := range []int32{3, 4} {
		if _, err := e.Insert(ns, []bsoncore.Document{mustRaw((bson.D{{Key: "_id", Value: id}}))}, true); err != nil {
			t.Fatal(err)
		}
	}
	ids, _ := naturalIDs(t, e, ns)
	if fmt.Sprint(ids) != "[2 3 4]" {
		t.Fatalf("natural order %v, want [2 3 4]", ids)
	}
	// The order and the counts are on disk: after a reopen the next insert
	// still evicts the oldest.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openEngine(t, dir)
	if _, err := e.Insert(ns, []bsoncore.Document{mustRaw(bson.D{{Key: "_id", Value: int32(5)}})}, true); err != nil {
		t.Fatal(err)
	}
	if ids, _ := naturalIDs(t, e, ns); fmt.Sprint(ids) != "[3 4 5]" {
		t.Fatalf("after a reopen: natural order %v, want [3 4 5]", ids)
	}
}

// TestCappedRace: writers racing into one capped collection while a
// reader watches it: no snapshot ever holds more than max documents, each
// writer's documents appear in the order it inserted them, and at the end
// the collection holds exactly max documents with consistent indexes.
func TestCappedRace(t *testing.T) {
	e := openEngine(t, "")
	ns := Namespace{"db", "c"}
	const max, writers, each = 25, 6, 60
	if err := e.CreateCollection(ns, cappedOpts(1<<20, max)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateIndexes(context.Background(), ns, []bsoncore.Document{mustRaw(bson.D{{Key: "key", Value: bson.D{{Key: "w", Value: 1}}}, {Key: "name", Value: "w_1"}})}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var stop atomic.Bool
	var over atomic.Int64
	wg.Add(1)
	go func() { // the reader
		defer wg.Done()
		for !stop.Load() {
			r, err := e.NewReader(ns)
			if err != nil {
				return
			}
			c, _ := r.Natural(0, false)
			n := 0
			for c.Next() {
				n++
			}
			_ = c.Close()
			_ = r.Close()
			if n > max {
				over.Store(int64(n))
			}
		}
	}()
	var ww sync.WaitGroup
	for w := range int32(writers) {
		ww.Add(1)
		go func() {
			defer ww.Done()
			for i := range int32(each) {
				d := mustRaw(bson.D{{Key: "_id", Value: w*1000 + i}, {Key: "w", Value: w}})
				if _, err := e.Insert(ns, []bsoncore.Document{d}, true); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	ww.Wait()
	stop.Store(true)
	wg.Wait()
	if n := over.Load(); n > 0 {
		t.Fatalf("a snapshot held %d documents, max %d", n, max)
	}
	ids, _ := naturalIDs(t, e, ns)
	if len(ids) != max {
		t.Fatalf("%d documents at the end, want %d", len(ids), max)
	}
	last := map[int32]int32{}
	for _, id := range ids {
		w, i := id/1000, id%1000
		if prev, ok := last[w]; ok && i <= prev {
			t.Fatalf("writer %d's documents out of order: %v", w, ids)
		}
		last[w] = i
	}
	if err := e.CheckIndexes(ns); err != nil {
		t.Fatal(err)
	}
}

func mustRaw(d bson.D) bsoncore.Document {
	raw, err := bson.Marshal(d)
	if err != nil {
		panic(err)
	}
	return raw
}

// BenchmarkCappedInsert compares inserts into a plain collection with
// inserts into a capped one that is full (every insert evicts), in batches
// of 100 documents of about 60 bytes.
func BenchmarkCappedInsert(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts bson.Raw
	}{{"plain", nil}, {"capped-full", cappedOpts(64<<10, 0)}} {
		b.Run(bc.name, func(b *testing.B) {
			e, err := Open(b.TempDir(), Options{SyncInterval: time.Hour})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			ns := Namespace{"db", "c"}
			if err := e.CreateCollection(ns, bc.opts); err != nil {
				b.Fatal(err)
			}
			batch := make([]bsoncore.Document, 100)
			id := int64(0)
			b.ResetTimer()
			for range b.N {
				for i := range batch {
					batch[i] = mustRaw(bson.D{{Key: "_id", Value: id}, {Key: "p", Value: "some payload of a log line"}})
					id++
				}
				if _, err := e.Insert(ns, batch, true); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/doc")
		})
	}
}

// TestCappedInsertsWake: the awaitData channel of a capped collection
// closes once an insert into it commits, and not for inserts elsewhere.
func TestCappedInsertsWake(t *testing.T) {
	e := openEngine(t, "")
	a, b := Namespace{"db", "a"}, Namespace{"db", "b"}
	for _, ns := range []Namespace{a, b} {
		if err := e.CreateCollection(ns, cappedOpts(4096, 0)); err != nil {
			t.Fatal(err)
		}
	}
	wake := e.CappedInserts(e.Catalog().Collection("db", "a").ID)
	insertOne := func(ns Namespace, id int32) {
		t.Helper()
		if _, err := e.Insert(ns, []bsoncore.Document{mustRaw(bson.D{{Key: "_id", Value: id}})}, true); err != nil {
			t.Fatal(err)
		}
	}
	insertOne(b, 1)
	insertOne(Namespace{"db", "plain"}, 1)
	select {
	case <-wake:
		t.Fatal("woken by inserts into other collections")
	default:
	}
	insertOne(a, 1)
	select {
	case <-wake:
	case <-time.After(5 * time.Second):
		t.Fatal("not woken by an insert into the collection")
	}
}
