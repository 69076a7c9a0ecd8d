package commands

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/session"
)

// DefaultCursorTimeout is MongoDB's cursorTimeoutMillis default: an idle
// cursor is closed after ten minutes.
const DefaultCursorTimeout = 10 * time.Minute

// Cursor is an open server-side cursor: the id a client holds, for getMore
// and killCursors, over the source of its documents (a plan or a
// pipeline's output).
type Cursor struct {
	ID       int64
	NS       string
	src      agg.Source
	lastUsed time.Time
	inUse    bool
	// held is a document read but not yet sent (it did not fit a batch).
	held bsoncore.Document
	// noTimeout: the cursor never expires when idle (find's
	// noCursorTimeout); set before its first Release.
	noTimeout bool
	// maxTime is what is left of the originating command's maxTimeMS, for
	// the next getMore (0: none); see resume.
	maxTime time.Duration
	// coll is the collection the cursor reads (its catalog record when the
	// cursor opened), nil for cursors over no collection: a getMore after
	// the collection is dropped or renamed fails (see checkCursorCollection).
	coll *catalog.Collection
	// examined are the keys and documents its plan had examined by the end
	// of its last batch, so each getMore reports its own (profiler.go).
	examined [2]int64
	// owner is the user ("db.name") whose command opened the cursor, ""
	// for none: under --auth only they may continue or kill it (auth.go).
	owner string
	// lsid is the logical session the cursor was opened in, if hasLSID:
	// a getMore must come from the same session, and killing the session
	// closes the cursor (sessions.go).
	lsid    session.ID
	hasLSID bool
	// inTxn: opened in a multi-document transaction, it closes when the
	// transaction ends (transactions.go).
	inTxn bool
}

// Cursors is the registry of open cursors, shared by all connections.
type Cursors struct {
	mu      sync.Mutex
	open    map[int64]*Cursor
	timeout time.Duration
	stop    chan struct{}
	once    sync.Once
}

// NewCursors starts a registry whose idle cursors expire after DefaultCursorTimeout.
func NewCursors() *Cursors {
	c := &Cursors{open: map[int64]*Cursor{}, timeout: DefaultCursorTimeout, stop: make(chan struct{})}
	go c.reap()
	return c
}

// SetTimeout changes the idle timeout (cursorTimeoutMillis).
func (c *Cursors) SetTimeout(d time.Duration) {
	c.mu.Lock()
	c.timeout = d
	c.mu.Unlock()
}

func (c *Cursors) reap() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case now := <-t.C:
			c.expire(now)
		}
	}
}

// expire closes cursors idle for longer than the timeout.
func (c *Cursors) expire(now time.Time) {
	c.mu.Lock()
	var dead []*Cursor
	for id, cur := range c.open {
		if !cur.inUse && !cur.noTimeout && now.Sub(cur.lastUsed) > c.timeout {
			dead = append(dead, cur)
			delete(c.open, id)
		}
	}
	c.mu.Unlock()
	for _, cur := range dead {
		_ = cur.src.Close()
	}
}

// Register keeps src open as a new cursor over ns and returns it checked out.
func (c *Cursors) Register(ns string, src agg.Source, held bsoncore.Document) *Cursor {
	c.mu.Lock()
	defer c.mu.Unlock()
	var id int64
	for id == 0 || c.open[id] != nil {
		id = rand.Int64() // ids are positive and never 0 (0 means "exhausted")
	}
	cur := &Cursor{ID: id, NS: ns, src: src, lastUsed: time.Now(), inUse: true, held: held}
	c.open[id] = cur
	return cur
}

// Checkout takes cursor id for a getMore on ns.
func (c *Cursors) Checkout(id int64, ns string) (*Cursor, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.open[id]
	if cur == nil {
		return nil, mongoerr.New(mongoerr.CursorNotFound, "cursor id %d not found", id)
	}
	if cur.NS != ns {
		return nil, mongoerr.New(mongoerr.Unauthorized, "Requested getMore on namespace '%s', but cursor belongs to a different namespace %s", ns, cur.NS)
	}
	if cur.inUse {
		return nil, mongoerr.New(mongoerr.CursorInUse, "cursor id %d is already in use", id)
	}
	cur.inUse = true
	return cur, nil
}

// Release returns a checked-out cursor; a finished one is closed and removed.
func (c *Cursors) Release(cur *Cursor, finished bool) {
	c.mu.Lock()
	cur.inUse = false
	cur.lastUsed = time.Now()
	if finished {
		delete(c.open, cur.ID)
	}
	c.mu.Unlock()
	if finished {
		_ = cur.src.Close()
	}
}

// Kill closes cursor id on ns if may allows it; it reports whether it
// existed (a cursor may refuses counts as not found).
func (c *Cursors) Kill(id int64, ns string, may func(*Cursor) bool) bool {
	c.mu.Lock()
	cur := c.open[id]
	if cur == nil || cur.NS != ns || !may(cur) {
		c.mu.Unlock()
		return false
	}
	delete(c.open, id)
	c.mu.Unlock()
	_ = cur.src.Close()
	return true
}

// Len is how many cursors are open.
func (c *Cursors) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.open)
}

// CloseAll closes every cursor and stops the reaper.
func (c *Cursors) CloseAll() {
	c.once.Do(func() { close(c.stop) })
	c.mu.Lock()
	all := c.open
	c.open = map[int64]*Cursor{}
	c.mu.Unlock()
	for _, cur := range all {
		_ = cur.src.Close()
	}
}

// checkCursorCollection answers a getMore on cur as MongoDB 7.0 does once
// the collection the cursor reads has been dropped (with its database, or
// replaced, as $out replaces a collection) or renamed: QueryPlanKilled
// (175), after which the cursor is gone (CursorNotFound). Cairn's cursor
// still holds its snapshot and could go on, but MongoDB's plan executor
// cannot, and clients expect the error.
func checkCursorCollection(cat *catalog.State, cur *Cursor) error {
	was := cur.coll
	if was == nil {
		return nil
	}
	if now := cat.Collection(was.DB, was.Name); now != nil && now.ID == was.ID {
		return nil
	}
	uuid := formatUUID(was.UUID.Data)
	for _, db := range cat.Databases() {
		for _, c := range cat.Collections(db) {
			if c.ID == was.ID {
				return mongoerr.New(mongoerr.QueryPlanKilled, "Executor error during getMore :: caused by :: collection renamed from '%s' to '%s'. UUID %s",
					was.Namespace(), c.Namespace(), uuid)
			}
		}
	}
	return mongoerr.New(mongoerr.QueryPlanKilled, "Executor error during getMore :: caused by :: collection dropped. UUID %s", uuid)
}

// formatUUID writes a 16-byte UUID as MongoDB prints one.
func formatUUID(b []byte) string {
	if len(b) != 16 {
		return fmt.Sprintf("%x", b)
	}
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
