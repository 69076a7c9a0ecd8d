package router

import (
	"context"
	"errors"
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/memberclient"
	"github.com/cairndb/cairn/internal/shard"
)

// clientOnly are the fields of a client's command the router does not pass
// to shards: its own session and cluster-time gossip, read preference
// (the router reads from primaries), and what it adds itself.
var clientOnly = map[string]bool{
	"$db": true, "lsid": true, "txnNumber": true, "$clusterTime": true, "$readPreference": true,
	"autocommit": true, "startTransaction": true, "shardVersion": true, "databaseVersion": true,
}

// txnSkip are the client's fields a transaction's statement does not pass
// on as they are: the router sends the transaction's readConcern with each
// participant's first statement.
var txnSkip = map[string]bool{"readConcern": true}

// rewrite copies src's fields but the client-only ones and those skip
// names, then lets add append more.
func rewrite(src bsoncore.Document, skip map[string]bool, add func(b *bsoncore.DocumentBuilder)) bsoncore.Document {
	idx, dst := copyFields(make([]byte, 0, len(src)+192), src, skip)
	if add != nil {
		b := bsoncore.NewDocumentBuilder()
		add(b)
		extra := b.Build()
		dst = append(dst, extra[4:len(extra)-1]...)
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// copyFields starts a document in dst and copies src's elements into it
// but the client-only ones and those skip names, as they are (no element
// slice, no key strings, no re-encoding): it runs on every command the
// router sends. The caller appends more and ends the document at idx.
func copyFields(dst []byte, src bsoncore.Document, skip map[string]bool) (int32, []byte) {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	if len(src) < 5 {
		return idx, dst
	}
	rest := src[4 : len(src)-1]
	for len(rest) > 0 {
		el, r, ok := bsoncore.ReadElement(rest)
		if !ok {
			break
		}
		rest = r
		if k := el.KeyBytes(); clientOnly[string(k)] || skip[string(k)] {
			continue
		}
		dst = append(dst, el...)
	}
	return idx, dst
}

// routing is what one command routes by: the database and, for a
// collection command, its routing table.
type routing struct {
	db   *dbInfo
	coll *collInfo
	ns   string
}

func (rt *routing) sharded() bool { return rt.coll != nil && rt.coll.m != nil }

// route reads the routing of db.coll; create makes the database when it
// does not exist yet (writes). A database that does not exist and is not
// created gives a nil db.
func (r *Router) route(ctx context.Context, db, coll string, create bool) (*routing, error) {
	d, err := r.cache.db(ctx, db, create)
	if err != nil || d == nil {
		return &routing{ns: db + "." + coll}, err
	}
	rt := &routing{db: d, ns: db + "." + coll}
	if coll != "" && d.primary != configShard {
		if rt.coll, err = r.cache.coll(ctx, rt.ns); err != nil {
			return nil, err
		}
	}
	return rt, nil
}

// routeTargets routes db.coll and targets filter; a database that does
// not exist gives a nil routing db and no shards.
func (r *Router) routeTargets(ctx context.Context, db, coll string, filter, collation bsoncore.Document) (*routing, []string, error) {
	rt, err := r.route(ctx, db, coll, false)
	if err != nil || rt.db == nil {
		return rt, nil, err
	}
	shards, _, err := rt.targetsUnder(filter, collation)
	return rt, shards, err
}

// targetsUnder is targets for a query run under collation (the command's;
// nil: the collection's default, config.collections' defaultCollation).
// Chunks are ranges of the simple order, so under a collation that is not
// simple a string the filter compares ("a") may equal one in another
// chunk ("A"): a filter with any string in it goes to every shard, as
// mongos broadcasts such a query.
func (rt *routing) targetsUnder(filter, collation bsoncore.Document) ([]string, bool, error) {
	if rt.sharded() && !simpleCollation(rt.collation(collation)) && collatable(filter) {
		return rt.allShards(), false, nil
	}
	return rt.targets(filter)
}

// collation is the collation a command runs under: its own (explicit), or
// the sharded collection's default; nil: simple.
func (rt *routing) collation(explicit bsoncore.Document) bsoncore.Document {
	if explicit != nil || !rt.sharded() {
		return explicit
	}
	return rt.coll.coll.DefaultCollation
}

// simpleCollation reports whether a collation document is the simple one
// (nil: none given).
func simpleCollation(d bsoncore.Document) bool {
	if d == nil {
		return true
	}
	loc, _ := d.Lookup("locale").StringValueOK()
	return loc == "simple"
}

// collatable reports whether a filter holds a string (or symbol) value at
// any depth: a value a collation compares differently from the simple
// order.
func collatable(d bsoncore.Document) bool {
	els, _ := d.Elements()
	for _, el := range els {
		v := el.Value()
		switch v.Type {
		case bsoncore.TypeString, bsoncore.TypeSymbol:
			return true
		case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
			if collatable(bsoncore.Document(v.Data)) {
				return true
			}
		}
	}
	return false
}

// targets returns the shards that may hold documents matching filter.
func (rt *routing) targets(filter bsoncore.Document) ([]string, bool, error) {
	if !rt.sharded() {
		return []string{rt.db.primary}, true, nil
	}
	if filter == nil {
		filter = bsoncore.Document{5, 0, 0, 0, 0}
	}
	shards, exact, err := rt.coll.m.Target(filter)
	if err != nil {
		return nil, false, err
	}
	if len(shards) == 0 { // matches nothing: ask the owner of the first chunk, for a well-formed empty answer
		shards = []string{rt.coll.m.Chunks[0].Shard}
	}
	return shards, exact, nil
}

// allShards are the shards owning a chunk of a sharded collection, or the
// primary.
func (rt *routing) allShards() []string {
	s, _, _ := rt.targets(nil)
	return s
}

// errStale says the routing was stale: the operation starts again with a
// fresh one.
type errStale struct{ err error }

func (e *errStale) Error() string { return "router: stale routing: " + e.err.Error() }
func (e *errStale) Unwrap() error { return e.err }

// stale codes: StaleConfig, StaleDbVersion, and the shard version
// mismatch an older shard reports.
func staleCode(code int32) bool { return code == 13388 || code == 249 || code == 63 }

// toShard sends body (without $db) to shard id with the routing's versions
// and returns its reply; an ok: 0 reply is a *memberclient.ReplyError, a stale one an
// *errStale.
func (r *Router) toShard(ctx context.Context, id string, rt *routing, body bsoncore.Document) (bsoncore.Document, error) {
	return r.toShardSeq(ctx, id, rt, body, nil)
}

// toShardSeq is toShard with a document sequence.
func (r *Router) toShardSeq(ctx context.Context, id string, rt *routing, body bsoncore.Document, seq *memberclient.Sequence) (bsoncore.Document, error) {
	sh, err := r.cache.shard(ctx, id)
	if err != nil {
		return nil, err
	}
	op := sessionOf(ctx)
	var skip map[string]bool
	if op != nil && op.txn != nil {
		skip = txnSkip // the transaction's readConcern goes to each participant's first statement
	}
	// The command is the client's kept fields, then the router's, appended
	// as raw elements: this runs on every command the router sends.
	buf := cmdBufs.Get().(*[]byte)
	defer func() {
		if cap(*buf) <= maxPooledCmd {
			cmdBufs.Put(buf)
		}
	}()
	idx, cmd := copyFields((*buf)[:0], body, skip)
	if op != nil {
		if cmd, err = op.appendSession(cmd, id, body.Index(0).Key()); err != nil { // sessions.go
			return nil, err
		}
	}
	db := "admin"
	if rt != nil && rt.db != nil {
		db = rt.db.name
		if !sh.unversioned {
			if rt.sharded() {
				cmd = bsoncore.AppendDocumentElement(cmd, "shardVersion", rt.coll.versionDoc(id))
			} else {
				cmd = bsoncore.AppendDocumentElement(cmd, "shardVersion", unshardedDoc)
				dv := rt.db.versionDoc
				if dv == nil { // a dbInfo not read from config.databases
					dv = rt.db.version.Doc()
				}
				cmd = bsoncore.AppendDocumentElement(cmd, "databaseVersion", dv)
			}
		}
	}
	if at := readTimeOf(ctx); at != 0 {
		cmd = appendGossip(cmd, at) // a snapshot read's time (snapshot.go)
	}
	cmd = bsoncore.AppendStringElement(cmd, "$db", db)
	cmd, _ = bsoncore.AppendDocumentEnd(cmd, idx)
	run := sh.set.RunSeq
	if onceOnly(body) {
		run = sh.set.RunSeqOnce
	}
	raw, err := run(ctx, cmd, seq) // cmd is framed (copied) before it returns
	*buf = cmd
	r.clock.observe(raw)
	reply, err := memberclient.Check(raw, err)
	var re *memberclient.ReplyError
	if errors.As(err, &re) && staleCode(int32(re.Code())) {
		return nil, &errStale{err}
	}
	return reply, err
}

// cmdBufs are the buffers toShardSeq builds shard commands in: each is
// copied into its connection's frame before the round trip returns, so
// the next command reuses it (one allocation less per routed command).
var cmdBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxPooledCmd bounds the buffers kept: a rare large command (an insert
// of big documents in its body) is not held on to.
const maxPooledCmd = 64 << 10

// onceOnly reports whether body is a write a shard may have applied when
// the connection breaks and that nothing dedupes: insert, update, delete
// and findAndModify without a txnNumber (a retryable write's statements
// are recorded in the shard's session table, so a resend of one is safe).
func onceOnly(body bsoncore.Document) bool {
	switch body.Index(0).Key() {
	case "insert", "update", "delete", "findAndModify", "findandmodify":
		_, err := body.LookupErr("txnNumber")
		return err != nil
	}
	return false
}

// unshardedDoc is the shardVersion of a command on an unsharded
// collection.
var unshardedDoc = shard.Unsharded.Doc()

// retry runs op until it finishes without a stale routing (at most a few
// times), refreshing ns's routing between attempts.
func (r *Router) retry(ctx context.Context, ns string, op func() error) error {
	var err error
	inTxn := sessionOf(ctx) != nil && sessionOf(ctx).txn != nil
	for attempt := 0; attempt < 5; attempt++ {
		err = op()
		var st *errStale
		if !errors.As(err, &st) {
			return err
		}
		r.cache.invalidate(ns)
		if inTxn {
			// A transaction's participants may have run part of it: it
			// is aborted and retried whole by the driver
			// (TransientTransactionError, txnStatementOutcome).
			return st.err
		}
	}
	var st *errStale
	if errors.As(err, &st) {
		return st.err
	}
	return err
}

// scatter sends each shard its command at once and returns the replies in
// shards' order; the first error wins.
func (r *Router) scatter(ctx context.Context, shards []string, rt *routing, build func(shard string) bsoncore.Document) ([]bsoncore.Document, error) {
	replies := make([]bsoncore.Document, len(shards))
	errs := make([]error, len(shards))
	if len(shards) == 1 {
		replies[0], errs[0] = r.toShard(ctx, shards[0], rt, build(shards[0]))
		return replies, errs[0]
	}
	var wg sync.WaitGroup
	for i, s := range shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[i], errs[i] = r.toShard(ctx, s, rt, build(s))
		}()
	}
	wg.Wait()
	if err := firstError(errs); err != nil {
		return nil, err
	}
	return replies, nil
}

// firstError is the first stale-routing error among errs (the operation
// starts again), else the first error.
func firstError(errs []error) error {
	for _, e := range errs {
		var st *errStale
		if errors.As(e, &st) {
			return e
		}
	}
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
