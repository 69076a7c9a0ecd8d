package router

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/memberclient"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// shardStream is one shard's cursor read as an agg.Source: its first
// batch, then getMore until the shard's cursor is exhausted.
type shardStream struct {
	r     *Router
	ctx   *context.Context // the current command's context, set by its owner
	shard string
	rt    *routing
	coll  string
	id    int64
	batch []bsoncore.Document
	i     int
	op    *opSession // the session the cursor was opened in: its getMore and killCursors name it
}

func newShardStream(r *Router, ctx *context.Context, shard string, rt *routing, reply bsoncore.Document) (*shardStream, error) {
	cur, ok := reply.Lookup("cursor").DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.InternalError, "shard %s answered without a cursor: %s", shard, reply)
	}
	s := &shardStream{r: r, ctx: ctx, shard: shard, rt: rt, op: sessionOf(*ctx)}
	s.id, _ = cur.Lookup("id").AsInt64OK()
	ns, _ := cur.Lookup("ns").StringValueOK()
	if i := indexByte(ns, '.'); i >= 0 {
		s.coll = ns[i+1:]
	}
	s.batch = arrayDocs(cur.Lookup("firstBatch"))
	return s, nil
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

func arrayDocs(v bsoncore.Value) []bsoncore.Document {
	arr, ok := v.ArrayOK()
	if !ok {
		return nil
	}
	vals, _ := arr.Values()
	out := make([]bsoncore.Document, len(vals))
	for i, v := range vals {
		out[i] = v.Document()
	}
	return out
}

func (s *shardStream) Next() (bsoncore.Document, error) {
	for s.i >= len(s.batch) {
		if s.id == 0 {
			return nil, nil
		}
		body := bsoncore.NewDocumentBuilder().AppendInt64("getMore", s.id).AppendString("collection", s.coll).Build()
		sh, err := s.r.cache.shard(*s.ctx, s.shard)
		if err != nil {
			return nil, err
		}
		idx, cmd := copyFields(nil, body, nil)
		if s.op != nil {
			if cmd, err = s.op.appendSession(cmd, s.shard, "getMore"); err != nil {
				return nil, err
			}
		}
		cmd, _ = bsoncore.AppendDocumentEnd(bsoncore.AppendStringElement(cmd, "$db", s.rt.db.name), idx)
		reply, err := memberclient.Check(sh.set.Run(*s.ctx, cmd))
		if err != nil {
			return nil, err
		}
		cur := reply.Lookup("cursor").Document()
		s.id, _ = cur.Lookup("id").AsInt64OK()
		s.batch, s.i = arrayDocs(cur.Lookup("nextBatch")), 0
	}
	s.i++
	return s.batch[s.i-1], nil
}

// Close kills the shard's cursor when it is still open.
func (s *shardStream) Close() error {
	if s.id == 0 {
		return nil
	}
	sh, err := s.r.cache.shard(context.Background(), s.shard)
	if err == nil {
		body := bsoncore.NewDocumentBuilder().AppendString("killCursors", s.coll).
			AppendArray("cursors", bsoncore.NewArrayBuilder().AppendInt64(s.id).Build()).Build()
		idx, cmd := copyFields(nil, body, nil)
		if s.op != nil {
			cmd, _ = s.op.appendSession(cmd, s.shard, "killCursors") // an ended transaction's: the shard closed it already
		}
		cmd, _ = bsoncore.AppendDocumentEnd(bsoncore.AppendStringElement(cmd, "$db", s.rt.db.name), idx)
		_, _ = sh.set.Run(context.Background(), cmd)
	}
	s.id = 0
	return nil
}

// routerCursor is a client's cursor on the router: the merged streams of
// its shards, with the skip and limit the router applies.
type routerCursor struct {
	id    int64
	ns    string
	conn  int64
	ctxp  *context.Context // the streams' context: each getMore's
	src   agg.Source
	skip  int64
	limit int64 // 0: none
	sent  int64
	sess  *sessionKey // the session the cursor was opened in, nil for none
	mu    sync.Mutex
	used  time.Time // when a getMore last read it (under cursors.mu)
	owner string    // the user who opened it ("db.name"; "" without access control)
}

// cursorTimeout is how long a router cursor may sit unread before the
// router kills it and its shards' cursors (cursorTimeoutMillis, 10
// minutes in MongoDB).
var cursorTimeout = 10 * time.Minute

// reap kills the cursors idle longer than cursorTimeout.
func (c *cursors) reap(now time.Time) {
	c.kill(func(rc *routerCursor) bool { return now.Sub(rc.used) > cursorTimeout })
}

// killSessions kills the cursors opened in the sessions keys names (in
// any session for an empty list).
func (c *cursors) killSessions(keys []sessionKey) {
	c.kill(func(rc *routerCursor) bool {
		if rc.sess == nil {
			return false
		}
		match := len(keys) == 0
		for _, k := range keys {
			match = match || *rc.sess == k
		}
		return match
	})
}

// checkCursorSession answers a getMore whose session differs from the
// cursor's as MongoDB does.
func checkCursorSession(op *opSession, rc *routerCursor) error {
	switch {
	case op != nil && rc.sess == nil:
		return mongoerr.New(mongoerr.GetMoreNoSessionCursor, "Cannot run getMore on cursor %d, which was not created in a session, in a session", rc.id)
	case op == nil && rc.sess != nil:
		return mongoerr.New(mongoerr.GetMoreNoLSID, "Cannot run getMore on cursor %d, which was created in a session, without an lsid", rc.id)
	case op != nil && op.key != *rc.sess:
		return mongoerr.New(mongoerr.CursorInUse, "Cannot run getMore on cursor %d, which was created in another session", rc.id)
	}
	return nil
}

// kill closes and forgets the cursors match picks (match runs under c.mu).
func (c *cursors) kill(match func(rc *routerCursor) bool) {
	c.mu.Lock()
	var killed []*routerCursor
	for id, rc := range c.m {
		if match(rc) {
			killed = append(killed, rc)
			delete(c.m, id)
		}
	}
	c.mu.Unlock()
	for _, rc := range killed {
		rc.mu.Lock()
		_ = rc.src.Close()
		rc.mu.Unlock()
	}
}

type cursors struct {
	mu sync.Mutex
	m  map[int64]*routerCursor
}

func (c *cursors) add(rc *routerCursor) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		var b [8]byte
		_, _ = rand.Read(b[:])
		id := int64(binary.LittleEndian.Uint64(b[:]) & (1<<62 - 1))
		if _, taken := c.m[id]; id != 0 && !taken {
			rc.id, rc.used = id, time.Now()
			c.m[id] = rc
			return
		}
	}
}

func (c *cursors) take(id int64) *routerCursor {
	c.mu.Lock()
	defer c.mu.Unlock()
	rc := c.m[id]
	delete(c.m, id)
	return rc
}

func (c *cursors) get(id int64) *routerCursor {
	c.mu.Lock()
	defer c.mu.Unlock()
	rc := c.m[id]
	if rc != nil {
		rc.used = time.Now()
	}
	return rc
}

// batch pulls up to n documents (n <= 0: 101) within 16 MB; done reports
// the source exhausted or the limit reached.
func (rc *routerCursor) batch(n int64) (docs []bsoncore.Document, done bool, err error) {
	if n <= 0 {
		n = 101
	}
	size := 0
	for int64(len(docs)) < n && size < 16<<20 {
		if rc.limit > 0 && rc.sent >= rc.limit {
			return docs, true, nil
		}
		d, err := rc.src.Next()
		if err != nil {
			return nil, true, err
		}
		if d == nil {
			return docs, true, nil
		}
		if rc.skip > 0 {
			rc.skip--
			continue
		}
		docs = append(docs, append(bsoncore.Document(nil), d...))
		size += len(d)
		rc.sent++
	}
	if rc.limit > 0 && rc.sent >= rc.limit {
		return docs, true, nil
	}
	return docs, false, nil
}

// cursorReply is {cursor: {id, ns, firstBatch|nextBatch}, ok: 1}.
func cursorReply(id int64, ns, field string, docs []bsoncore.Document) bsoncore.Document {
	arr := bsoncore.NewArrayBuilder()
	for _, d := range docs {
		arr.AppendDocument(d)
	}
	cur := bsoncore.NewDocumentBuilder().AppendInt64("id", id).AppendString("ns", ns).AppendArray(field, arr.Build()).Build()
	return bsoncore.NewDocumentBuilder().AppendDocument("cursor", cur).AppendDouble("ok", 1).Build()
}

// openCursor answers the first batch of src and keeps the rest as a
// router cursor.
func (r *Router) openCursor(ctxp *context.Context, req *request, ns string, src agg.Source, skip, limit, batchSize int64, single bool) (bsoncore.Document, error) {
	rc := &routerCursor{ns: ns, conn: req.conn, src: src, skip: skip, limit: limit, ctxp: ctxp, owner: req.auth.userKey()}
	if op := sessionOf(*ctxp); op != nil {
		rc.sess = &op.key
	}
	docs, done, err := rc.batch(batchSize)
	if err != nil {
		_ = src.Close()
		return nil, err
	}
	if done || single {
		_ = src.Close()
		return cursorReply(0, ns, "firstBatch", docs), nil
	}
	r.cursors.add(rc)
	return cursorReply(rc.id, ns, "firstBatch", docs), nil
}

func cmdGetMore(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	id, ok := req.body.Lookup("getMore").AsInt64OK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'getMore.getMore' is the wrong type, expected type 'long'")
	}
	coll := req.str("collection")
	rc := r.cursors.get(id)
	if rc == nil || rc.ns != req.db+"."+coll {
		return nil, mongoerr.New(mongoerr.CursorNotFound, "cursor id %d not found", id)
	}
	if rc.owner != req.auth.userKey() { // MongoDB's rule: only its user continues it
		return nil, mongoerr.New(mongoerr.Unauthorized, "cursor id %d was not created by the authenticated user", id)
	}
	if err := checkCursorSession(sessionOf(ctx), rc); err != nil {
		return nil, err
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	*rc.ctxp = ctx
	n, _ := req.body.Lookup("batchSize").AsInt64OK()
	docs, done, err := rc.batch(n)
	if err != nil || done {
		r.cursors.take(id)
		_ = rc.src.Close()
		if err != nil {
			return nil, err
		}
		return cursorReply(0, rc.ns, "nextBatch", docs), nil
	}
	return cursorReply(id, rc.ns, "nextBatch", docs), nil
}

func cmdKillCursors(ctx context.Context, r *Router, req *request) (bsoncore.Document, error) {
	v, ok := req.arg("cursors")
	arr, isArr := v.ArrayOK()
	if !ok || !isArr {
		return nil, mongoerr.New(mongoerr.FailedToParse, "BSON field 'killCursors.cursors' is missing but a required field")
	}
	vals, _ := arr.Values()
	killed, notFound := bsoncore.NewArrayBuilder(), bsoncore.NewArrayBuilder()
	for _, v := range vals {
		id, _ := v.AsInt64OK()
		if rc := r.cursors.get(id); rc != nil && rc.owner != req.auth.userKey() {
			return nil, mongoerr.New(mongoerr.Unauthorized, "cursor id %d was not created by the authenticated user", id)
		}
		if rc := r.cursors.take(id); rc != nil {
			rc.mu.Lock()
			_ = rc.src.Close()
			rc.mu.Unlock()
			killed.AppendInt64(id)
		} else {
			notFound.AppendInt64(id)
		}
	}
	empty := bsoncore.NewArrayBuilder().Build()
	return bsoncore.NewDocumentBuilder().AppendArray("cursorsKilled", killed.Build()).AppendArray("cursorsNotFound", notFound.Build()).
		AppendArray("cursorsAlive", empty).AppendArray("cursorsUnknown", empty).AppendDouble("ok", 1).Build(), nil
}
