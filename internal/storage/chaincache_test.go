package storage

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// cachedRead is a request's read of a document in a test of reads
// through the document cache: its value ("-" when absent) and whether the
// cache served it.
type cachedRead struct {
	val string
	hit bool
}

// gatedSet is a replica set for Hooks.Propose whose proposals apply (in
// order, through ApplyReplicated) only once their gate opens: a group
// stays in flight, in the chain's batch and not in the store, until the
// test settles the set.
type gatedSet struct {
	db    *DB
	mu    sync.Mutex
	index uint64
	gates []chan struct{}
	open  bool // proposals made now apply at once
}

func (s *gatedSet) propose(repr []byte, _, _ bool) func() error {
	s.mu.Lock()
	g := make(chan struct{})
	if s.open {
		close(g)
	}
	s.gates = append(s.gates, g)
	s.mu.Unlock()
	repr = append([]byte(nil), repr...)
	return func() error {
		<-g
		s.mu.Lock()
		defer s.mu.Unlock()
		s.index++
		return s.db.ApplyReplicated(s.index, repr)
	}
}

func (s *gatedSet) proposals() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.gates)
}

// setOpen opens every gate (and those of later proposals) or keeps later
// ones closed.
func (s *gatedSet) setOpen(open bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open = open
	if !open {
		return
	}
	for _, g := range s.gates {
		select {
		case <-g:
		default:
			close(g)
		}
	}
}

// TestChainReadsThroughCache: on a pipelined member, a request's read of
// a document no group of its chain wrote is served from the document
// cache, and a document a group of the chain wrote (or a range of
// documents it deleted) is read from the chain's batch while that group
// is still in flight, not yet in the store (invariant "Chain reads
// through the cache"); a chain begun after every group completed reads
// through the cache again. Each step is one request, proposed as its own
// group while the earlier steps' groups are held (each also writes a
// document of its own: a group that writes nothing is not proposed);
// settle first lets every held group apply, waits for the pipeline to
// see them complete and reads k once (which caches it).
func TestChainReadsThroughCache(t *testing.T) {
	k, other := docKey("k"), docKey("other")
	type read = cachedRead
	type step struct {
		settle bool
		write  func(tx *Txn)
		want   read
	}
	set := func(key []byte, v string) func(*Txn) { return func(tx *Txn) { tx.Set(key, []byte(v)) } }
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"a document the chain did not write hits", []step{{false, set(other, "x"), read{"v1", true}}, {false, nil, read{"v1", true}}}},
		{"a document an earlier group of the chain wrote, in flight", []step{{false, set(k, "v2"), read{"v2", false}}, {false, nil, read{"v2", false}}}},
		{"a document an earlier group deleted, in flight", []step{{false, func(tx *Txn) { tx.Delete(k) }, read{"-", false}}, {false, nil, read{"-", false}}}},
		{"a range of documents an earlier group deleted, in flight", []step{
			{false, func(tx *Txn) { tx.DeleteRange(docSpace, docSpaceEnd) }, read{"-", false}},
			{false, set(other, "x"), read{"-", false}},
			{false, nil, read{"-", false}}}},
		{"a range elsewhere", []step{{false, func(tx *Txn) { tx.DeleteRange([]byte("o"), []byte("p")) }, read{"v1", true}}, {false, nil, read{"v1", true}}}},
		{"a new chain once the groups completed", []step{
			{false, set(k, "v2"), read{"v2", false}},
			{true, nil, read{"v2", true}},
			{false, nil, read{"v2", true}}}},
		{"a new chain after a range deletion", []step{
			{false, func(tx *Txn) { tx.DeleteRange(docSpace, docSpaceEnd) }, read{"-", false}},
			{true, set(k, "v3"), read{"v3", false}},
			{true, set(other, "x"), read{"v3", true}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &gatedSet{open: true}
			db := openTest(t, Options{Hooks: &Hooks{Propose: s.propose, Publishes: func() bool { return false }}})
			s.db = db
			t.Cleanup(func() { s.setOpen(true) }) // before the store's Close, which waits for the held groups
			put(t, db, string(k), "v1", string(other), "o")
			s.setOpen(false)
			var pending []chan error
			settle := func() {
				t.Helper()
				s.setOpen(true)
				for _, e := range pending {
					if err := <-e; err != nil {
						t.Fatal(err)
					}
				}
				pending = nil
				// A request that writes nothing waits for every group in
				// flight: the next group starts a chain.
				if err := db.Write(func(*Txn) error { return nil }); err != nil {
					t.Fatal(err)
				}
				cachedGet(t, db, k)
				s.setOpen(false)
			}
			settle()
			for i, st := range tc.steps {
				if st.settle {
					settle()
				}
				var got read
				errc := make(chan error, 1)
				pending = append(pending, errc)
				before := s.proposals()
				go func() {
					errc <- db.Write(func(tx *Txn) error {
						if st.write != nil {
							st.write(tx)
						}
						// A group that writes nothing is not proposed.
						tx.Set(docKey(fmt.Sprintf("pad%d", i)), []byte("x"))
						hits := db.DocumentCacheStats().Hits
						v, ok, err := tx.Get(nil, k)
						got = read{"-", db.DocumentCacheStats().Hits > hits}
						if ok {
							got.val = string(v)
						}
						return err
					})
				}()
				for deadline := time.Now().Add(10 * time.Second); s.proposals() == before; time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("step %d: not proposed after 10 s", i)
					}
				}
				if got != st.want {
					t.Errorf("step %d: read k %+v, want %+v", i, got, st.want)
				}
			}
			settle()
		})
	}
}
