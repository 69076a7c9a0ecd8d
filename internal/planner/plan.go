package planner

import (
	"context"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/collation"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
)

// Query is a read as the planner sees it: a find, or the selection of a
// count, distinct, update, delete or findAndModify.
type Query struct {
	Filter     *query.Filter
	RawFilter  bsoncore.Document // {} when none; carried for explain only (see doc.go)
	Sort       *query.Sort       // nil: any order
	RawSort    bsoncore.Document
	Proj       *query.Projection // nil: whole documents
	RawProj    bsoncore.Document
	Positional bool // the projection has "a.$"
	Skip       int64
	Limit      int64 // 0: none
	// Hint forces a plan: an index name, a key pattern, or {$natural: ±1}.
	// Type 0: none.
	Hint bsoncore.Value
	// Min and Max bound the hinted index's keys (min inclusive, max
	// exclusive), as find's min and max options.
	Min, Max     bsoncore.Document
	SortMemory   int64
	AllowDiskUse bool
	// Count: the caller only counts the results (the count command), so a
	// scan whose bounds are exact need not fetch documents (COUNT_SCAN);
	// such results are empty documents.
	Count bool
	// DistinctPath: the caller keeps only the first result of each value
	// of this path, in the requested order (a $group on it whose
	// accumulators are all $first, after the $sort). The planner may then
	// read one index entry per value (DISTINCT_SCAN, distinct.go); any
	// other plan returns every result, which is correct too.
	DistinctPath string
	// ReturnKey: each result is the index key it was read by, instead of
	// the document (find's returnKey; the projection is ignored).
	// ShowRecordID: each result gets "$recordId" (find's showRecordId).
	// See returnkey.go.
	ReturnKey, ShowRecordID bool
	// Collation is the query's collation (nil: simple), which Filter and
	// Sort already compare strings by. An index whose collation differs
	// bounds no condition on a string, document or array and gives no
	// order (MongoDB's rule); see collation.go.
	Collation *collation.Collator
	// TextScore: the caller reads each result's text score ({$meta:
	// "textScore"} in a pipeline after the read), so a text plan appends
	// it to each document as its last field (query.TextScoreField) and
	// the caller removes it.
	TextScore bool
	// OplogAfter: a forward collection scan of local.oplog.rs may start
	// after this position (an entry's ts), which the filter's ts bound
	// gives (engine.OplogStart; the filter still applies).
	OplogAfter uint64
	// Owned, when set, keeps only the documents it reports true for: a
	// shard's SHARDING_FILTER, which drops orphans (documents of chunks
	// the shard does not own) from a read that carries a shardVersion
	// (sharding.go).
	Owned func(bsoncore.Document) bool
}

// Options tune planning.
type Options struct {
	// Cache, when set, remembers the winning plan per query shape.
	Cache *Cache
	// NS names the collection ("db.coll"), for the cache and explain.
	NS string
	// Explain keeps what explain reports: per-stage timings and every
	// candidate's trial statistics.
	Explain bool
	// AsOf, non-zero, reads a versioned collection as it was at that
	// cluster time (engine.NewReaderAt): no index, no point read without a
	// snapshot, no plan cache.
	AsOf hlc.Timestamp
	// Txn, when set, reads inside that transaction: its snapshot plus its
	// own writes (engine.NewReaderIn); a point read goes through it too.
	Txn *engine.Txn
	// PrepareConflicts makes a read outside a transaction wait on prepare
	// conflicts, as MongoDB's reads of a write and its snapshot,
	// linearizable and afterClusterTime reads do (see Open); without it
	// a read reads past a prepared transaction's documents, seeing them
	// as before it (MongoDB's ignore_prepared for local and majority
	// reads).
	PrepareConflicts bool
}

// Open plans q over collection ns of eng: it opens a snapshot (an
// engine.Reader) and plans over it as Prepare does. opts.NS defaults to
// ns.
//
// A query that selects one _id (the IDHACK plan, see pointID), planned to
// run rather than to be explained, reads without a snapshot: a single read
// is consistent by itself, and the point read is the hot path (DESIGN.md
// §4), where a snapshot, the index list and a stage per step cost more
// than the read. In a transaction it reads through the transaction's own
// view (engine.GetIn), which is one already; a read after the transaction
// ended fails (storage.ErrTransactionDone) rather than read another state. Its plan is the IDHACK stage, under a projection when q
// has one: sort and limit are moot over at most one document, and any skip
// leaves none. Explain plans the same query through Prepare, which renders
// the full IDHACK tree.
//
// The plan runs under ctx (see Prepare), except the point read: one read
// has nothing to interrupt, so it keeps no context and may outlive ctx.
// Outside a transaction, with opts.PrepareConflicts, a plan waits on
// prepare conflicts under ctx: the point read first, while a prepared
// transaction holds its document (engine.WaitPreparedDoc), any other plan
// at each document or index entry a prepared transaction holds
// (engine.Reader.PrepareConflicts). At a cluster time (opts.AsOf, or a
// transaction begun at one), Open first waits for the transactions
// prepared before the read holding ns (engine.WaitPreparedAt: engine's
// "A read at T sees a prepared commit iff its commitTimestamp ≤ T").
func Open(ctx context.Context, eng *engine.Engine, ns engine.Namespace, q Query, opts Options) (*Exec, error) {
	if opts.AsOf != 0 {
		return openAsOf(ctx, eng, ns, q, opts)
	}
	if opts.Txn != nil {
		if !opts.Explain && !q.ReturnKey && !q.ShowRecordID && q.Owned == nil && opts.Txn.ReadAt() == 0 {
			if id, ok := pointID(&q); ok {
				e := pointRead(eng, ns, &q, id)
				e.x.txn = opts.Txn // engine.GetIn: the snapshot plus its own writes
				return e, nil
			}
		}
		return openInTxn(ctx, eng, ns, q, opts)
	}
	if !opts.Explain && !q.ReturnKey && !q.ShowRecordID && q.Owned == nil {
		if id, ok := pointID(&q); ok {
			if opts.PrepareConflicts {
				if err := eng.WaitPreparedDoc(ctx, ns, id); err != nil { // a prepare conflict
					return nil, err
				}
			}
			return pointRead(eng, ns, &q, id), nil
		}
	}
	return openSnapshot(ctx, eng, ns, q, opts)
}

// IsPointRead reports whether Open, planning q to run, returns the point
// read, which keeps no context (see Open).
func IsPointRead(q *Query) bool {
	_, ok := pointID(q)
	return ok && q.Owned == nil
}

// openSnapshot is Open's general case (apart, so that only it moves q to
// the heap: Open itself must not, or every point read pays a Query
// allocation; TestPointReadAllocs).
func openSnapshot(ctx context.Context, eng *engine.Engine, ns engine.Namespace, q Query, opts Options) (*Exec, error) {
	if opts.NS == "" {
		opts.NS = ns.String()
	}
	r, err := eng.NewReader(ns)
	if err != nil {
		return nil, err
	}
	if opts.PrepareConflicts {
		r.PrepareConflicts(ctx)
	}
	return Prepare(ctx, r, &q, opts)
}

// openInTxn is Open in a transaction's snapshot (apart, as openSnapshot).
func openInTxn(ctx context.Context, eng *engine.Engine, ns engine.Namespace, q Query, opts Options) (*Exec, error) {
	if at := opts.Txn.ReadAt(); at != 0 { // a transaction at a cluster time: a prepare conflict
		if err := eng.WaitPreparedAt(ctx, ns, at); err != nil {
			return nil, err
		}
	}
	if opts.NS == "" {
		opts.NS = ns.String()
	}
	r, err := eng.NewReaderIn(opts.Txn, ns)
	if err != nil {
		return nil, err
	}
	return Prepare(ctx, r, &q, opts)
}

// openAsOf is Open at a cluster time. A point read reads without a
// snapshot here too (engine.GetAt).
func openAsOf(ctx context.Context, eng *engine.Engine, ns engine.Namespace, q Query, opts Options) (*Exec, error) {
	if err := eng.WaitPreparedAt(ctx, ns, opts.AsOf); err != nil { // a prepare conflict at the time
		return nil, err
	}
	if !opts.Explain && !q.ReturnKey && !q.ShowRecordID && q.Owned == nil {
		if id, ok := pointID(&q); ok {
			e := pointRead(eng, ns, &q, id)
			e.x.at = opts.AsOf
			return e, nil
		}
	}
	if opts.NS == "" {
		opts.NS = ns.String()
	}
	r, err := eng.NewReaderAt(ns, opts.AsOf)
	if err != nil {
		return nil, err
	}
	opts.Cache = nil // plans at a time use no index: nothing to share
	return Prepare(ctx, r, &q, opts)
}

// pointRead is Open's IDHACK plan: the Exec, its context and its stage are
// one allocation. It keeps no Query: only explain reads it (QueryPlanner,
// the trial), and explain never plans a point read here.
func pointRead(eng *engine.Engine, ns engine.Namespace, q *Query, id bsoncore.Value) *Exec {
	p := &struct {
		e  Exec
		x  execCtx
		id idHack
	}{x: execCtx{eng: eng, ns: ns}, id: idHack{id: id, done: q.Skip > 0}}
	p.e.x, p.e.root = &p.x, &p.id
	if q.Proj != nil {
		p.e.root = newProjection(p.e.root, q)
	}
	eng.RecordIndexAccess(ns, "_id_") // as recordAccesses counts an IDHACK plan
	return &p.e
}

// Express is the point read of one _id without a plan (MongoDB 8.0's
// express path; its 7.0 counterpart is the IDHACK plan): the document of ns
// whose _id is id, appended to dst, read as Open's point read reads it when
// run — after a prepare conflict's wait when prepareConflicts (the read
// waits as Open's does), counted as one access of the _id index
// ($indexStats, as pointRead counts it), without a snapshot. The caller
// has checked that Open would plan the point read: a query pointID
// accepts, run outside a transaction and a read time, with no ownership
// filter, projection, returnKey or showRecordId. The figures its
// IDHACK stage would report are 1 key and 1 document examined when found,
// none otherwise.
func Express(ctx context.Context, eng *engine.Engine, dst []byte, ns engine.Namespace, id bsoncore.Value, prepareConflicts bool) (doc []byte, found bool, err error) {
	if prepareConflicts {
		if err := eng.WaitPreparedDoc(ctx, ns, id); err != nil { // a prepare conflict
			return dst, false, err
		}
	}
	eng.RecordIndexAccess(ns, "_id_") // as pointRead
	return eng.Get(dst, ns, id)
}

// ExpressSummary is the plan summary of a read Express answered: its
// IDHACK stage's, as PlanSummary names it.
const ExpressSummary = "IDHACK"

// pointID returns the _id q selects when q is a plain {_id: v} equality
// with no hint and no min or max: the query the IDHACK plan answers.
func pointID(q *Query) (bsoncore.Value, bool) {
	if q.Hint.Type != 0 || len(q.Min) > 5 || len(q.Max) > 5 {
		return bsoncore.Value{}, false
	}
	id, ok := q.Filter.IDEquality()
	if ok && q.Collation != nil && collatable(id) {
		return bsoncore.Value{}, false // the _id index is simple (collation.go)
	}
	return id, ok
}

// Prepare plans q over the collection r reads and returns the executable
// plan, which owns r from then on (Close closes it). The plan runs under
// ctx: its trial and every later Next end with opctx.Err(ctx) once ctx ends
// (maxTimeMS, killOp, a client gone), checked every few hundred works.
func Prepare(ctx context.Context, r *engine.Reader, q *Query, opts Options) (*Exec, error) {
	x := &execCtx{r: r, ctx: ctx, timing: opts.Explain}
	e := &Exec{x: x, q: q, start: time.Now(), ns: opts.NS}
	pl := &planning{q: q, r: r}
	if err := pl.indexes(); err != nil {
		_ = r.Close()
		return nil, err
	}
	cands, err := pl.candidates()
	if err != nil {
		_ = r.Close()
		return nil, err
	}
	if err := e.choose(cands, opts.Cache); err != nil {
		_ = e.Close()
		return nil, err
	}
	if !opts.Explain {
		e.recordAccesses()
	}
	return e, nil
}

// planning holds what one Prepare works with.
type planning struct {
	q   *Query
	r   *engine.Reader
	a   *analysis
	ixs []*indexRef // secondary indexes the planner may choose, catalog order
	all []*indexRef // every secondary index, for hints
	// clustered: the collection was created with clusteredIndex, so an
	// _id range scan is explained as CLUSTERED_IXSCAN.
	clustered bool
}

// indexes gathers the collection's indexes.
func (pl *planning) indexes() error {
	pl.clustered = pl.r.Clustered()
	for _, info := range pl.r.Indexes() {
		ref := &indexRef{name: info.Name, spec: info.Spec, multikey: info.Multikey, building: info.Building, typeBits: info.TypeBits, mk: info.MultikeyPaths, mkKnown: info.PathsKnown}
		pl.all = append(pl.all, ref)
		if info.Building || info.Spec.Hidden || (info.Spec.IsText() && !pl.q.Filter.HasText()) {
			continue
		}
		pl.ixs = append(pl.ixs, ref)
	}
	return nil
}

// candidate is one way to answer the query, not yet run.
type candidate struct {
	root     stage
	index    string // what the cache records: the index scanned ("" for a collection scan or _id lookup; see cacheEntry)
	reverse  bool
	sorted   bool // no blocking sort
	fetchCnt int  // FETCH stages (fewer is better on ties)
}

// candidates lists the plans to choose among: the hinted one, an _id
// lookup, one per useful index, or else the collection scan.
func (pl *planning) candidates() ([]*candidate, error) {
	q := pl.q
	pl.a = analyze(q.Filter.Tree())
	pl.a.coll = q.Collation
	if needsScore(q) && !q.Filter.HasText() {
		return nil, mongoerr.New(mongoerr.TextScoreUnavailable, "query requires text score metadata, but it is not available")
	}
	if ts, nested := q.Filter.Text(); ts != nil || nested {
		c, err := pl.textCandidate(ts, nested)
		if err != nil {
			return nil, err
		}
		return []*candidate{c}, nil
	}
	if nc, err := findNear(q.Filter); err != nil || nc != nil {
		if err != nil {
			return nil, err
		}
		c, err := pl.nearCandidate(nc)
		if err != nil {
			return nil, err
		}
		return []*candidate{c}, nil
	}
	if q.Hint.Type != 0 {
		c, err := pl.hinted()
		if err != nil {
			return nil, err
		}
		return []*candidate{c}, nil
	}
	if len(q.Min) > 5 || len(q.Max) > 5 {
		return nil, mongoerr.New(mongoerr.BadValue, "error processing query: planner returned error :: caused by :: When using min()/max() a hint of which index to use must be provided")
	}
	if id, ok := pointID(q); ok {
		return []*candidate{pl.finish(&idHack{id: id}, false)}, nil
	}
	if c := pl.distinctCandidate(); c != nil {
		return []*candidate{c}, nil
	}
	var out []*candidate
	for _, ix := range append([]*indexRef{{name: "_id_", spec: idSpec, isID: true}}, concrete(pl.a, pl.ixs)...) {
		if c := pl.indexCandidate(ix, false); c != nil {
			out = append(out, c)
		}
	}
	if c := pl.orCandidate(nil); c != nil {
		out = append(out, c)
	}
	if len(out) == 0 {
		out = append(out, pl.collScan(false))
	}
	return out, nil
}

// collScan is the plan that reads the whole collection.
func (pl *planning) collScan(reverse bool) *candidate {
	c := pl.finish(&collScan{filter: pl.q.Filter, rawFilter: pl.q.RawFilter, reverse: reverse, oplogAfter: pl.q.OplogAfter}, false)
	c.reverse = reverse
	return c
}

// indexCandidate plans a scan of ix, or nil when ix does not help (no
// bounds and no order); forced (a hint) always plans it.
func (pl *planning) indexCandidate(ix *indexRef, forced bool) *candidate {
	bounds := pl.bounds(ix)
	sorted, reverse := pl.providesSort(ix, bounds)
	if !forced {
		switch {
		case ix.spec.PartialFilterExpression != nil && !implies(pl.a, ix.spec.PartialFilter().Tree()):
			return nil
		case ix.spec.Sparse && !sparseSafe(ix.keyFields(), bounds):
			return nil
		case ix.wildPath != "" && bounds[1].IsFull():
			return nil
		case ix.spec.IsGeo():
			if !geoBounded(ix, bounds) {
				return nil
			}
		case bounds[0].IsFull() && !(sorted && pl.q.Sort != nil):
			return nil
		}
	}
	scan := newIXScan(ix, bounds, reverse)
	scan.clustered = ix.isID && pl.clustered
	var c *candidate
	if pl.coverable(ix) {
		scan.cover, scan.filter, scan.rawFilter = true, pl.q.Filter, pl.q.RawFilter
		c = pl.finish(scan, sorted)
		walk(c.root, func(s stage) {
			if p, ok := s.(*projection); ok {
				p.name = "PROJECTION_COVERED"
			}
		})
	} else {
		f, raw := pl.residual(ix)
		if f == nil && pl.q.Count && pl.q.Sort == nil && pl.q.Proj == nil && !ix.multikey && pl.q.Owned == nil {
			scan.countOnly = true
			c = pl.finish(scan, sorted)
		} else {
			c = pl.finish(&fetch{oneInput: input(scan), filter: f, rawFilter: raw}, sorted)
		}
	}
	c.index, c.reverse = ix.name, reverse
	if ix.wildPath != "" {
		c.index += "\x00" + ix.wildPath // one candidate per path
	}
	return c
}

// concrete lists the indexes as plans use them for the analysed filter:
// each wildcard index becomes one index per filtered path it holds (in
// path order, so that plans and the cache are deterministic).
func concrete(a *analysis, ixs []*indexRef) []*indexRef {
	var out []*indexRef
	for _, ix := range ixs {
		if !ix.spec.IsWildcard() {
			out = append(out, ix)
			continue
		}
		paths := make([]string, 0, len(a.conds))
		for p := range a.conds {
			if ix.spec.WildcardIndexes(p) {
				paths = append(paths, p)
			}
		}
		slices.Sort(paths)
		for _, p := range paths {
			out = append(out, wildcardRef(ix, p))
		}
	}
	return out
}

// sparseSafe reports whether every document the bounds admit has some
// indexed field present, so a sparse index holds all of them: a bounded
// field that excludes null (the key of a missing field; for a hashed
// field, the hash of null).
func sparseSafe(fields []index.Field, bounds []OIL) bool {
	for i, o := range bounds {
		if o.IsFull() {
			continue
		}
		if fields[i].Kind == index.Hashed {
			if !o.contains(hashedNull) && !o.contains(hashedUndefined) {
				return true
			}
			continue
		}
		if !o.hasNull() {
			return true
		}
	}
	return false
}

// bounds computes the bounds of every field of ix from the filter.
func (pl *planning) bounds(ix *indexRef) []OIL { b, _ := boundsFrom(pl.a, ix); return b }

// boundsFrom computes the bounds of every field of ix from the analysed
// filter, and which fields' bounds are exactly all their conditions
// intersected (for residual). On a multikey index, a field whose path
// shares a multikey prefix with another bounded field stays unbounded:
// both may reach the same array through different elements ({"x.a": 1,
// "x.b": 2} over x: [{a: 1}, {b: 2}]), so their bounds cannot be
// compounded; and a field whose own path is multikey is bounded by one
// condition only (fieldOIL).
func boundsFrom(a *analysis, ix *indexRef) (out []OIL, exact []bool) {
	fields := ix.keyFields()
	out, exact = make([]OIL, len(fields)), make([]bool, len(fields))
	if ix.wildPath != "" {
		out[0] = pointsOIL([]bsoncore.Value{stringValue(ix.wildPath)})
		out[1] = wildcardOIL(a.conds[ix.wildPath], ix.multikey)
		return out, exact
	}
	var used []int
	for i, f := range fields {
		conds := a.conds[f.Path]
		if len(conds) == 0 {
			continue
		}
		if ix.multikey && slices.ContainsFunc(used, func(j int) bool { return ix.shareMultikeyPrefix(i, j) }) {
			continue
		}
		if !collationBounds(a, ix, conds) {
			continue
		}
		var o OIL
		switch f.Kind {
		case index.Hashed:
			o = hashedOIL(conds)
		case index.Geo2dsphere:
			o = geoOIL(conds, ix.spec.GeoParams())
		case index.Geo2d:
			g, _ := ix.spec.Grid()
			o = geo2dOIL(conds, g) // geo2d.go
		default:
			// Intervals intersect in the simple order: on a collated index
			// one condition bounds the field, as on a multikey one
			// (collation.go).
			o = fieldOIL(conds, ix.fieldMultikey(i) || ix.spec.Collation != nil)
			exact[i] = !ix.fieldMultikey(i)
			if ix.spec.Collation != nil {
				r, whole := collatedRange(conds)
				if whole && !ix.fieldMultikey(i) {
					o = r
				}
				exact[i] = exact[i] && collatedExact(i, len(conds), whole)
			}
		}
		if o == nil {
			continue
		}
		out[i] = o
		used = append(used, i)
	}
	return out, exact
}

// sortKey is one field of the requested sort.
type sortKey struct {
	path string
	dir  int
}

func sortKeys(raw bsoncore.Document) ([]sortKey, bool) {
	elems, err := raw.Elements()
	if err != nil {
		return nil, false
	}
	out := make([]sortKey, 0, len(elems))
	for _, el := range elems {
		f, ok := bsonx.AsFloat64(el.Value())
		if !ok || (f != 1 && f != -1) {
			return nil, false // {$meta: …}
		}
		out = append(out, sortKey{path: el.Key(), dir: int(f)})
	}
	return out, true
}

// providesSort reports whether scanning ix within bounds returns documents
// in the requested order, and in which direction. Each sort key must be a
// field of the index whose path never held an array (a document with an
// array there sits at several places of the order, none of them its sort
// key); leading fields bound to one value may be skipped, multikey or not
// (a document has that key once), and so may sort fields the scan binds to
// one value on a path without arrays (an array's sort key is not the bound
// value). Fields after the sort keys may be multikey: a document's
// duplicates then share its sort key, and the scan drops them.
func (pl *planning) providesSort(ix *indexRef, bounds []OIL) (sorted, reverse bool) {
	if pl.q.Sort == nil {
		return true, false
	}
	if !sameCollation(ix, pl.q.Collation) {
		return false, false
	}
	keys, ok := sortKeys(pl.q.RawSort)
	if !ok {
		return false, false
	}
	if ix.wildPath != "" {
		// As in MongoDB, a wildcard index gives the order of a sort on
		// exactly the path it serves, when that path never held an array:
		// the scan reads one path, whose values are in key order.
		if len(keys) != 1 || keys[0].path != ix.wildPath || ix.multikey {
			return false, false
		}
		d := keys[0].dir
		if ix.keyFields()[1].Kind == index.Descending {
			d = -d
		}
		return true, d < 0
	}
	dir, i := 0, 0
	fields := ix.spec.KeyPattern
	for j := 0; j < len(keys); {
		if i < len(fields) && fields[i].Path == keys[j].path && fields[i].Kind != index.Hashed && fields[i].Kind != index.Geo2dsphere && fields[i].Kind != index.Geo2d && !ix.fieldMultikey(i) {
			d := keys[j].dir
			if fields[i].Kind == index.Descending {
				d = -d
			}
			if dir != 0 && d != dir {
				return false, false
			}
			dir = d
			i, j = i+1, j+1
			continue
		}
		if i < len(fields) && singlePoint(bounds[i]) {
			i++
			continue
		}
		if pointField(ix, bounds, keys[j].path) {
			j++
			continue
		}
		return false, false
	}
	return true, dir < 0
}

func singlePoint(o OIL) bool { return len(o) == 1 && o[0].IsPoint() }

// pointField reports whether path is a field of the index, on a path
// without arrays, bound to one value.
func pointField(ix *indexRef, bounds []OIL, path string) bool {
	for i, f := range ix.keyFields() {
		if f.Path == path && singlePoint(bounds[i]) && !ix.fieldMultikey(i) {
			return true
		}
	}
	return false
}

// hinted plans the hinted index (or a collection scan for $natural).
func (pl *planning) hinted() (*candidate, error) {
	q := pl.q
	bad := mongoerr.New(mongoerr.BadValue, "error processing query: planner returned error :: caused by :: hint provided does not correspond to an existing index")
	var ix *indexRef
	switch q.Hint.Type {
	case bsoncore.TypeString:
		name := q.Hint.StringValue()
		if name == "_id_" {
			ix = &indexRef{name: "_id_", spec: idSpec, isID: true}
		}
		for _, r := range pl.all {
			if r.name == name {
				ix = r
			}
		}
	case bsoncore.TypeEmbeddedDocument:
		d := q.Hint.Document()
		elems, _ := d.Elements()
		if len(elems) == 1 && elems[0].Key() == "$natural" {
			if len(q.Min) > 5 || len(q.Max) > 5 {
				return nil, mongoerr.New(mongoerr.BadValue, "error processing query: planner returned error :: caused by :: min and max are incompatible with $natural")
			}
			f, _ := bsonx.AsFloat64(elems[0].Value())
			return pl.collScan(f < 0), nil
		}
		if len(elems) == 1 && elems[0].Key() == "_id" {
			if f, ok := bsonx.AsFloat64(elems[0].Value()); ok && f == 1 {
				ix = &indexRef{name: "_id_", spec: idSpec, isID: true}
			}
		}
		for _, r := range pl.all {
			if bsonx.CompareDocuments(r.spec.Key, d) == 0 { // {a: 1} and {a: 1.0} name one index
				ix = r
			}
		}
	default:
		return nil, mongoerr.New(mongoerr.FailedToParse, "hint must be either a string or nested object")
	}
	if ix != nil && ix.building {
		ix = nil // not complete yet: as if it did not exist
	}
	if ix != nil && ix.spec.IsText() {
		// A text index holds only the documents with terms, under their
		// terms: it answers $text (text.go), never a scan of it.
		return nil, bad
	}
	if ix == nil || ix.spec.Hidden || ix.spec.IsWildcard() {
		if ix == nil && !pl.r.Exists() {
			return pl.collScan(false), nil // no collection: nothing to read either way
		}
		if ix != nil && !ix.spec.Hidden {
			// A wildcard index cannot be scanned whole: a full scan of
			// it would miss documents (and return others several
			// times). It serves the first filtered path it can bound,
			// or the collection is read instead.
			for _, w := range concrete(pl.a, []*indexRef{ix}) {
				if c := pl.indexCandidate(w, false); c != nil {
					return c, nil
				}
			}
			return pl.collScan(false), nil
		}
		return nil, bad
	}
	if len(q.Min) > 5 || len(q.Max) > 5 {
		return pl.minMax(ix)
	}
	return pl.indexCandidate(ix, true), nil
}

// finish adds the stages above the base: fetch/filter are done; a
// blocking sort unless the base gives the order, skip, limit, projection.
func (pl *planning) finish(base stage, sorted bool) *candidate {
	q := pl.q
	c := &candidate{sorted: sorted || q.Sort == nil}
	root := base
	if q.Owned != nil {
		root = &shardingFilter{oneInput: input(root), owned: q.Owned}
	}
	if q.Sort != nil && !sorted {
		limit := int64(0)
		if q.Limit > 0 {
			limit = q.Skip + q.Limit
		}
		root = &sortStage{oneInput: input(root), sort: q.Sort, raw: q.RawSort, limit: limit, memLimit: q.SortMemory, allowDiskUse: q.AllowDiskUse,
			carry: q.ReturnKey || q.ShowRecordID}
		if q.Skip > 0 {
			root = &skipStage{oneInput: input(root), n: q.Skip, left: q.Skip}
		}
	} else {
		if q.Skip > 0 {
			root = &skipStage{oneInput: input(root), n: q.Skip, left: q.Skip}
		}
		if q.Limit > 0 {
			root = &limitStage{oneInput: input(root), n: q.Limit}
		}
	}
	if q.Proj != nil && !q.ReturnKey {
		root = newProjection(root, q)
	} else if needsScore(q) && !q.TextScore {
		root = &stripScore{oneInput: input(root)}
	}
	if q.ReturnKey || q.ShowRecordID {
		if q.ReturnKey {
			walk(root, func(s stage) {
				if scan, ok := s.(*ixScan); ok {
					scan.keepTB = true
				}
			})
		}
		rk := &returnKeyStage{oneInput: input(root), returnKey: q.ReturnKey, showRecordID: q.ShowRecordID}
		walk(root, func(s stage) {
			if _, ok := s.(*idHack); ok {
				rk.fromID = true
			}
		})
		root = rk
	}
	c.root = root
	walk(root, func(s stage) {
		if _, ok := s.(*fetch); ok {
			c.fetchCnt++
		}
	})
	return c
}

// newProjection puts q's projection over root.
func newProjection(root stage, q *Query) stage {
	return &projection{oneInput: input(root), name: projectionKind(q.RawProj), proj: q.Proj, raw: q.RawProj, filter: q.Filter, positional: q.Positional}
}

// projectionKind names the projection stage as MongoDB does:
// PROJECTION_SIMPLE for top-level inclusions or exclusions only.
func projectionKind(raw bsoncore.Document) string {
	elems, _ := raw.Elements()
	for _, el := range elems {
		k := el.Key()
		if len(k) == 0 || k[0] == '$' {
			return "PROJECTION_DEFAULT"
		}
		for i := 0; i < len(k); i++ {
			if k[i] == '.' {
				return "PROJECTION_DEFAULT"
			}
		}
		switch el.Value().Type {
		case bsoncore.TypeBoolean, bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble:
		default:
			return "PROJECTION_DEFAULT"
		}
	}
	return "PROJECTION_SIMPLE"
}

// minMax plans the hinted index between find's min (inclusive) and max
// (exclusive) keys, which name every field of the key pattern in order.
func (pl *planning) minMax(ix *indexRef) (*candidate, error) {
	fields := ix.spec.KeyPattern
	read := func(d bsoncore.Document, what string) ([]bsoncore.Value, error) {
		if len(d) <= 5 {
			return nil, nil
		}
		elems, _ := d.Elements()
		if len(elems) != len(fields) {
			return nil, mongoerr.New(mongoerr.BadValue, "error processing query: planner returned error :: caused by :: The index chosen is not the index specified in %s", what)
		}
		out := make([]bsoncore.Value, len(elems))
		for i, el := range elems {
			if el.Key() != fields[i].Path {
				return nil, mongoerr.New(mongoerr.BadValue, "error processing query: planner returned error :: caused by :: The index chosen is not the index specified in %s", what)
			}
			out[i] = el.Value()
		}
		return out, nil
	}
	lo, err := read(pl.q.Min, "min")
	if err != nil {
		return nil, err
	}
	hi, err := read(pl.q.Max, "max")
	if err != nil {
		return nil, err
	}
	scan := newIXScan(ix, make([]OIL, len(fields)), false)
	var rng engine.KeyRange
	if lo != nil {
		rng.Lo = encodeTuple(ix.spec, lo)
	}
	if hi != nil {
		rng.Hi = encodeTuple(ix.spec, hi)
	}
	scan.ranges, scan.checkFrom = []engine.KeyRange{rng}, len(fields)
	scan.minMax = [2]bsoncore.Document{pl.q.Min, pl.q.Max}
	sorted, reverse := pl.providesSort(ix, make([]OIL, len(fields)))
	c := pl.finish(&fetch{oneInput: input(scan), filter: pl.q.Filter, rawFilter: pl.q.RawFilter}, sorted && !reverse)
	c.index = ix.name
	return c, nil
}

// encodeTuple encodes a key (one value per field) as the index stores it.
func encodeTuple(spec *index.Spec, vals []bsoncore.Value) []byte {
	var out []byte
	for i, v := range vals {
		out = encodePart(out, v, spec.KeyPattern[i].Kind == index.Descending, collatorOf(spec))
	}
	return out
}

// residual is the part of the filter a scan of ix within bounds does not
// already guarantee, for FETCH to apply (nil: nothing; the scan is exact).
// A top-level condition on an index field is guaranteed when the bounds
// hold it exactly: the field's path holds no arrays (in no document: the
// index is not multikey there), all its conditions were intersected into
// the bounds, and each is an equality to a plain scalar, an $in of such,
// or a type-bracketed range. Anything else stays.
func (pl *planning) residual(ix *indexRef) (*query.Filter, bsoncore.Document) {
	q := pl.q
	tree := q.Filter.Tree()
	if ix.wildPath != "" || len(tree) == 0 {
		return q.Filter, q.RawFilter
	}
	_, exact := boundsFrom(pl.a, ix)
	fields := map[string]bool{}
	for i, f := range ix.keyFields() {
		// A hashed field's bounds are hashes, which different values
		// share: its conditions always stay (exact is false).
		fields[f.Path] = fields[f.Path] || exact[i]
	}
	keep := make([]bool, len(tree))
	kept := 0
	for i := range tree {
		c := &tree[i]
		if c.Kind == query.PathClause && fields[c.Key] && !hasNumericPart(c.Key) && exactCondition(c.Ops) {
			continue
		}
		keep[i] = true
		kept++
	}
	switch kept {
	case 0:
		return nil, nil
	case len(tree):
		return q.Filter, q.RawFilter
	}
	f, raw, err := q.Filter.Select(keep)
	if err != nil {
		return q.Filter, q.RawFilter
	}
	return f, raw
}

// exactCondition reports whether the bounds of a field's conditions select
// exactly the values they match (on a field holding no arrays).
func exactCondition(ops []query.Op) bool {
	for _, op := range ops {
		switch {
		case op.Implicit:
			if op.Name != "$eq" || !exactScalar(op.Value) {
				return false
			}
		case op.Name == "$eq":
			if !exactScalar(op.Value) {
				return false
			}
		case op.Name == "$in":
			for _, x := range op.List {
				if !exactScalar(x) {
					return false
				}
			}
		case op.Name == "$gt", op.Name == "$gte", op.Name == "$lt", op.Name == "$lte":
			if _, ok := rangeOIL(op.Name, op.Value); !ok {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// exactScalar reports an equality operand whose one point bound is
// exactly what the equality matches on a non-array field.
func exactScalar(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeString,
		bsoncore.TypeBoolean, bsoncore.TypeDateTime, bsoncore.TypeObjectID, bsoncore.TypeTimestamp:
		return true
	}
	return false
}
