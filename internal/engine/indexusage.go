package engine

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairndb/cairn/internal/catalog"
)

// Index access counters, for $indexStats. They live in memory only, as
// MongoDB's do: accesses.since is when counting began (the index's creation
// or the server's start, whichever is later).

// indexUsage maps an index id to its counter. The _id index, which has no
// id of its own, counts under its collection's id: catalog ids come from
// one sequence, so the two never collide.
type indexUsage struct{ m sync.Map } // id → *usageCounter

type usageCounter struct {
	ops   atomic.Int64
	since time.Time
}

func (u *indexUsage) counter(id uint64, now func() time.Time) *usageCounter {
	if c, ok := u.m.Load(id); ok {
		return c.(*usageCounter)
	}
	c, _ := u.m.LoadOrStore(id, &usageCounter{since: now()})
	return c.(*usageCounter)
}

// IndexAccess is one index's access count since a moment.
type IndexAccess struct {
	Ops   int64
	Since time.Time
}

// RecordIndexAccess counts one use of index name of ns by a query plan
// ("_id_" for the _id index), for reads that use an index without a plan
// (the point read of {_id: v}); plans count through
// Reader.RecordIndexAccess. An unknown collection or index is ignored.
func (e *Engine) RecordIndexAccess(ns Namespace, name string) {
	coll := e.cat.Current().Collection(ns.DB, ns.Coll)
	if coll == nil {
		return
	}
	if id, ok := usageID(coll, name); ok {
		e.usage.counter(id, e.now).ops.Add(1)
	}
}

// IndexAccesses reports the access counter of index name of ns.
func (e *Engine) IndexAccesses(ns Namespace, name string) IndexAccess {
	coll := e.cat.Current().Collection(ns.DB, ns.Coll)
	if coll == nil {
		return IndexAccess{}
	}
	id, ok := usageID(coll, name)
	if !ok {
		return IndexAccess{}
	}
	c := e.usage.counter(id, e.now)
	return IndexAccess{Ops: c.ops.Load(), Since: c.since}
}

func usageID(coll *catalog.Collection, name string) (uint64, bool) {
	if name == catalog.IDIndexName {
		return coll.ID, true
	}
	if ix := coll.Index(name); ix != nil {
		return ix.ID, true
	}
	return 0, false
}
