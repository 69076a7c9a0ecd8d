package engine

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

// loadN inserts n documents {_id: i, k: i % mod, tags: [...]} in batches.
func loadN(t *testing.T, e *Engine, ns Namespace, n, mod int) {
	t.Helper()
	var batch []bsoncore.Document
	for i := range n {
		d := bson.D{{"_id", i}, {"k", i % mod}}
		if i%7 == 0 {
			d = append(d, bson.E{"tags", bson.A{i % 3, i % 5}})
		}
		batch = append(batch, doc(t, d))
		if len(batch) == 500 || i == n-1 {
			if res, err := e.Insert(ns, batch, true); err != nil || len(res.WriteErrors) > 0 {
				t.Fatalf("load: %v %v", err, res.WriteErrors)
			}
			batch = batch[:0]
		}
	}
}

// TestIndexBuildWithConcurrentWriters builds three indexes in small batches
// while writers insert, update and delete across the whole _id range, then
// checks that every index holds exactly its documents' entries.
func TestIndexBuildWithConcurrentWriters(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	e := openEngine(t, "")
	ns := Namespace{"ix", "build"}
	const n = 3000
	loadN(t, e, ns, n, 50)
	batches := 0
	e.SetIndexBuildTuning(IndexBuildTuning{BatchDocs: 100, AfterBatch: func(done, total int64) { batches++ }})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writeErr error
	var errMu sync.Mutex
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := rng.IntN(n + 500)
				var err error
				switch rng.IntN(3) {
				case 0:
					_, err = e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{"_id", id}, {"k", rng.IntN(50)}, {"tags", bson.A{rng.IntN(9)}}})}, true)
				case 1:
					_, err = e.Replace(ns, val(t, id), doc(t, bson.D{{"k", rng.IntN(50)}, {"u", fmt.Sprint(w, i)}}))
				case 2:
					_, err = e.Delete(ns, val(t, id))
				}
				if err != nil {
					errMu.Lock()
					writeErr = err
					errMu.Unlock()
					return
				}
			}
		}()
	}
	_, err := e.CreateIndexes(context.Background(), ns, []bsoncore.Document{
		spec(t, bson.D{{"key", bson.D{{"k", 1}}}, {"name", "k_1"}}),
		spec(t, bson.D{{"key", bson.D{{"tags", 1}, {"k", -1}}}, {"name", "tags_1_k_-1"}}),
		spec(t, bson.D{{"key", bson.D{{"u", 1}}}, {"name", "u_1"}, {"sparse", true}}),
	})
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if writeErr != nil {
		t.Fatal(writeErr)
	}
	if batches < n/100 {
		t.Errorf("the build ran %d batches, want at least %d (one commit per batch)", batches, n/100)
	}
	if err := e.CheckIndexes(ns); err != nil {
		t.Fatal(err)
	}
	coll := e.Catalog().Collection(ns.DB, ns.Coll)
	for _, ix := range coll.Indexes {
		if ix.Building {
			t.Errorf("%s still building after createIndexes returned", ix.Name)
		}
	}
	if !coll.Index("tags_1_k_-1").Multikey {
		t.Error("tags_1_k_-1 indexed arrays but is not multikey")
	}
}

// TestUniqueBuildWithConcurrentMoves moves a duplicated key away during a
// unique build: the build succeeds (the data no longer has duplicates when
// it ends) and the entry of the document that kept the key survives.
func TestUniqueBuildWithConcurrentMoves(t *testing.T) {
	e := openEngine(t, "")
	ns := Namespace{"ix", "umove"}
	loadN(t, e, ns, 1000, 1000)
	// _id 0 and _id 999 share k 0; the build reaches 0 first.
	if _, err := e.Replace(ns, val(t, 999), doc(t, bson.D{{"k", 0}})); err != nil {
		t.Fatal(err)
	}
	moved := false
	e.SetIndexBuildTuning(IndexBuildTuning{BatchDocs: 100, AfterBatch: func(done, total int64) {
		if !moved {
			moved = true
			if _, err := e.Replace(ns, val(t, 999), doc(t, bson.D{{"k", -1}})); err != nil {
				t.Error(err)
			}
		}
	}})
	if _, err := e.CreateIndexes(context.Background(), ns, []bsoncore.Document{spec(t, bson.D{{"key", bson.D{{"k", 1}}}, {"name", "k_1"}, {"unique", true}})}); err != nil {
		t.Fatal(err)
	}
	if err := e.CheckIndexes(ns); err != nil {
		t.Fatal(err)
	}
}

// TestUniqueBuildFailsLateAndLeavesNothing puts the duplicate far from the
// first batch: several batches commit entries before the build fails, and
// all of them must go.
func TestUniqueBuildFailsLateAndLeavesNothing(t *testing.T) {
	e := openEngine(t, "")
	ns := Namespace{"ix", "late"}
	loadN(t, e, ns, 2000, 1000) // k repeats after 1000 documents
	e.SetIndexBuildTuning(IndexBuildTuning{BatchDocs: 100})
	_, err := e.CreateIndexes(context.Background(), ns, []bsoncore.Document{
		spec(t, bson.D{{"key", bson.D{{"k", 1}}}, {"name", "k_1"}, {"unique", true}}),
		spec(t, bson.D{{"key", bson.D{{"tags", 1}}}, {"name", "tags_1"}}),
	})
	me, ok := mongoerr.As(err)
	if !ok || me.Code != mongoerr.DuplicateKey {
		t.Fatalf("unique build over duplicates: %v, want 11000", err)
	}
	if len(me.Extra) != 2 || me.Extra[0].Name != "keyPattern" || me.Extra[1].Name != "keyValue" {
		t.Errorf("duplicate key error extras = %+v, want keyPattern and keyValue", me.Extra)
	}
	if n := len(e.Catalog().Collection(ns.DB, ns.Coll).Indexes); n != 0 {
		t.Fatalf("failed build left %d index records", n)
	}
	it, _ := e.db.NewIter([]byte{storage.SpaceIndex}, []byte{storage.SpaceIndex + 1})
	defer it.Close()
	if it.First() {
		t.Fatalf("failed build left index entries behind: %x", it.Key())
	}
}

// TestDropIndexAbortsBuild drops a building index between batches.
func TestDropIndexAbortsBuild(t *testing.T) {
	e := openEngine(t, "")
	ns := Namespace{"ix", "abort"}
	loadN(t, e, ns, 1000, 10)
	dropped := false
	e.SetIndexBuildTuning(IndexBuildTuning{BatchDocs: 100, AfterBatch: func(done, total int64) {
		if !dropped {
			dropped = true
			if _, err := e.DropIndexes(ns, []string{"k_1"}); err != nil {
				t.Error(err)
			}
		}
	}})
	_, err := e.CreateIndexes(context.Background(), ns, []bsoncore.Document{spec(t, bson.D{{"key", bson.D{{"k", 1}}}, {"name", "k_1"}})})
	if mongoerr.CodeOf(err) != mongoerr.IndexBuildAborted {
		t.Fatalf("dropping a building index: %v, want IndexBuildAborted", err)
	}
	it, _ := e.db.NewIter([]byte{storage.SpaceIndex}, []byte{storage.SpaceIndex + 1})
	defer it.Close()
	if it.First() {
		t.Fatalf("aborted build left index entries behind: %x", it.Key())
	}
}

// TestBuildProgressAndReaders checks the build's currentOp entry and that a
// scan of the collection completes while the build is paused mid-way.
func TestBuildProgressAndReaders(t *testing.T) {
	e := openEngine(t, "")
	ns := Namespace{"ix", "progress"}
	loadN(t, e, ns, 1000, 10)
	checked := false
	e.SetIndexBuildTuning(IndexBuildTuning{BatchDocs: 250, AfterBatch: func(done, total int64) {
		if checked {
			return
		}
		checked = true
		var found bool
		for _, op := range e.Ops().List() {
			if op.Desc == "IndexBuildsCoordinatorMongod" {
				found = true
				if op.Msg != buildMsg || op.Done != 250 || op.Total != 1000 || op.NS != "ix.progress" {
					t.Errorf("build op = %+v", op)
				}
				if got := bsoncore.Document(op.Command).Lookup("createIndexes").StringValue(); got != "progress" {
					t.Errorf("build op command = %s", bson.Raw(op.Command))
				}
			}
		}
		if !found {
			t.Error("no index build in the operations list")
		}
		// A reader does not wait for the build.
		if ids := scanIDs(t, e, ns); len(ids) != 1000 {
			t.Errorf("scan during the build saw %d documents", len(ids))
		}
		// The planner is told the index is still building (and skips it).
		r, err := e.NewReader(ns)
		if err != nil {
			t.Fatal(err)
		}
		building := false
		for _, ix := range r.Indexes() {
			building = building || ix.Name == "k_1" && ix.Building
		}
		_ = r.Close()
		if !building {
			t.Error("the reader does not mark k_1 as building")
		}
	}})
	if _, err := e.CreateIndexes(context.Background(), ns, []bsoncore.Document{spec(t, bson.D{{"key", bson.D{{"k", 1}}}, {"name", "k_1"}})}); err != nil {
		t.Fatal(err)
	}
	if !checked {
		t.Fatal("the build ran no batch")
	}
	if ops := e.Ops().List(); len(ops) != 0 {
		t.Errorf("operations left after the build: %+v", ops)
	}
}

// TestUnfinishedBuildDroppedAtOpen closes the engine in the middle of a
// build: the reopened engine has no trace of the index.
func TestUnfinishedBuildDroppedAtOpen(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ns := Namespace{"ix", "crash"}
	loadN(t, e, ns, 500, 10)
	e.SetIndexBuildTuning(IndexBuildTuning{BatchDocs: 100, AfterBatch: func(done, total int64) {
		_ = e.Close() // the next batch finds the store closed
	}})
	if _, err := e.CreateIndexes(context.Background(), ns, []bsoncore.Document{spec(t, bson.D{{"key", bson.D{{"k", 1}}}, {"name", "k_1"}})}); err == nil {
		t.Fatal("a build whose engine closed succeeded")
	}
	e2 := openEngine(t, dir)
	if ix := e2.Catalog().Collection(ns.DB, ns.Coll).Index("k_1"); ix != nil {
		t.Fatalf("reopened engine still has the unfinished index %+v", ix)
	}
	it, _ := e2.db.NewIter([]byte{storage.SpaceIndex}, []byte{storage.SpaceIndex + 1})
	defer it.Close()
	if it.First() {
		t.Fatalf("unfinished build's entries survived reopening: %x", it.Key())
	}
}

// TestBuildLogs checks the build's start and end lines in the log.
func TestBuildLogs(t *testing.T) {
	var buf syncBuffer
	e, err := Open(t.TempDir(), Options{Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ns := Namespace{"ix", "logs"}
	loadN(t, e, ns, 300, 10)
	if _, err := e.CreateIndexes(context.Background(), ns, []bsoncore.Document{spec(t, bson.D{{"key", bson.D{{"k", 1}}}, {"name", "k_1"}})}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{`"msg":"index build: started","ns":"ix.logs","indexes":["k_1"],"documents":300`, `"msg":"index build: done","ns":"ix.logs","indexes":["k_1"],"documents":300`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSecondRequestWaitsForTheBuild sends the same createIndexes while a
// build runs: it returns only when the build has committed, and fails if
// the build fails.
func TestSecondRequestWaitsForTheBuild(t *testing.T) {
	for _, tc := range []struct {
		name   string
		unique bool
		want   mongoerr.Code
	}{{"succeeds", false, 0}, {"fails", true, mongoerr.IndexBuildAborted}} {
		t.Run(tc.name, func(t *testing.T) {
			e := openEngine(t, "")
			ns := Namespace{"ix", "twice"}
			loadN(t, e, ns, 1000, 10) // k repeats: a unique build fails
			s := spec(t, bson.D{{"key", bson.D{{"k", 1}}}, {"name", "k_1"}, {"unique", tc.unique}})
			second := make(chan error, 1)
			started := false
			e.SetIndexBuildTuning(IndexBuildTuning{BatchDocs: 5, AfterBatch: func(done, total int64) {
				if started {
					return
				}
				started = true
				go func() {
					res, err := e.CreateIndexes(context.Background(), ns, []bsoncore.Document{s})
					if err == nil && !res.AllExisted {
						err = fmt.Errorf("second request created an index: %+v", res)
					}
					second <- err
				}()
				time.Sleep(50 * time.Millisecond)
				select {
				case err := <-second:
					t.Errorf("the second request returned during the build: %v", err)
				default:
				}
			}})
			_, err := e.CreateIndexes(context.Background(), ns, []bsoncore.Document{s})
			if (err == nil) != (tc.want == 0) {
				t.Fatalf("first request: %v", err)
			}
			if err := <-second; mongoerr.CodeOf(err) != tc.want {
				t.Fatalf("second request: %v, want code %d", err, tc.want)
			}
		})
	}
}
