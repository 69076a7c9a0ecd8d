package planner

import (
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/query"
)

// doc is an explain document under construction.
type doc = bson.D

// put appends a field; counters small enough are int32, as MongoDB's
// explain writes them.
func put(d *doc, k string, v any) {
	if n, ok := v.(int64); ok && n >= -1<<31 && n < 1<<31 {
		v = int32(n)
	}
	*d = append(*d, bson.E{Key: k, Value: v})
}

// oneInput is the input of a stage that reads one other (FETCH, SORT,
// SKIP, LIMIT, PROJECTION_*). It is held in an array so that children,
// which walk calls on every request, returns it without allocating.
type oneInput struct{ kid [1]stage }

func input(s stage) oneInput          { return oneInput{[1]stage{s}} }
func (o *oneInput) in() stage         { return o.kid[0] }
func (o *oneInput) children() []stage { return o.kid[:] }

// collScan reads every document in natural order (or reversed) and
// returns those the filter matches (MongoDB's COLLSCAN): _id order, or
// insertion order for a capped collection.
type collScan struct {
	stageStats
	filter    *query.Filter
	rawFilter bsoncore.Document // the filter, for explain
	reverse   bool
	rng       engine.KeyRange // min/max on _id narrow the scan
	// oplogAfter starts a forward scan of the oplog after this ts
	// (Query.OplogAfter).
	oplogAfter uint64
	cur        *engine.Cursor
	docs       int64
	m          member
}

func (s *collScan) work(x *execCtx) (*member, state, error) {
	if s.cur == nil {
		var c *engine.Cursor
		var err error
		if s.rng.Lo == nil && s.rng.Hi == nil {
			var after uint64
			if x.r.IsOplog() && !s.reverse {
				after = s.oplogAfter // seek to a ts bound
			}
			c, err = x.r.Natural(after, s.reverse) // insertion order, for a capped collection
		} else {
			c, err = x.r.Docs(s.rng, s.reverse)
		}
		if err != nil {
			return nil, isEOF, err
		}
		s.cur = c
	}
	if !s.cur.Next() {
		return nil, isEOF, s.cur.Close()
	}
	d, err := s.cur.Value()
	if err != nil {
		return nil, isEOF, err
	}
	s.docs++
	if s.filter != nil {
		r, err := s.filter.Exec(d)
		if err != nil {
			return nil, isEOF, err
		}
		if !r.Matched {
			return nil, needTime, nil
		}
	}
	s.m = member{rid: s.cur.Key(), doc: d}
	return &s.m, advanced, nil
}

func (s *collScan) children() []stage { return nil }
func (s *collScan) close() error {
	if s.cur == nil {
		return nil
	}
	return s.cur.Close()
}

func (s *collScan) describe(d *doc, withStats bool) {
	put(d, "stage", "COLLSCAN")
	if len(s.rawFilter) > 5 {
		put(d, "filter", bson.Raw(s.rawFilter))
	}
	put(d, "direction", direction(s.reverse))
	if withStats {
		addCommon(d, &s.stats)
		put(d, "docsExamined", s.docs)
	}
}

func direction(reverse bool) string {
	if reverse {
		return "backward"
	}
	return "forward"
}

// idHack is a point read of one _id (MongoDB's IDHACK).
type idHack struct {
	stageStats
	id         bsoncore.Value
	done       bool
	keys, docs int64
	buf        []byte
	m          member
}

func (s *idHack) work(x *execCtx) (*member, state, error) {
	if s.done {
		return nil, isEOF, nil
	}
	s.done = true
	var rid []byte
	var found bool
	var err error
	if x.r == nil {
		// A point read without a snapshot (see Open): one read is
		// consistent by itself, and the record id is not needed above.
		switch {
		case x.txn != nil:
			s.buf, found, err = x.eng.GetIn(x.txn, s.buf[:0], x.ns, s.id)
		case x.at != 0:
			s.buf, found, err = x.eng.GetAt(s.buf[:0], x.ns, s.id, x.at)
		default:
			s.buf, found, err = x.eng.Get(s.buf[:0], x.ns, s.id)
		}
	} else {
		rid = idKey(s.id)
		s.buf, found, err = x.r.Fetch(s.buf[:0], rid)
	}
	if err != nil || !found {
		return nil, isEOF, err
	}
	s.keys, s.docs = 1, 1
	s.m = member{rid: rid, doc: s.buf}
	return &s.m, advanced, nil
}

func (s *idHack) children() []stage { return nil }
func (s *idHack) close() error      { return nil }
func (s *idHack) describe(d *doc, withStats bool) {
	put(d, "stage", "IDHACK")
	if withStats {
		addCommon(d, &s.stats)
		put(d, "keysExamined", s.keys)
		put(d, "docsExamined", s.docs)
	}
}

// fetch reads the document of each record its input returns, unless the
// input already carries it, and applies the filter (MongoDB's FETCH).
type fetch struct {
	stageStats
	oneInput
	filter    *query.Filter
	rawFilter bsoncore.Document // the filter, for explain
	docs      int64
	hadObj    int64 // inputs that came with their document (the _id index)
	buf       []byte
	m         member
}

func (s *fetch) work(x *execCtx) (*member, state, error) {
	m, st, err := step(x, s.in())
	if st != advanced || err != nil {
		return nil, st, err
	}
	d := m.doc
	if d != nil {
		s.hadObj++
	} else {
		var found bool
		s.buf, found, err = x.r.Fetch(s.buf[:0], m.rid)
		if err != nil {
			return nil, isEOF, err
		}
		if !found {
			return nil, needTime, nil
		}
		d = s.buf
	}
	s.docs++
	if s.filter != nil {
		r, err := s.filter.Exec(d)
		if err != nil {
			return nil, isEOF, err
		}
		if !r.Matched {
			return nil, needTime, nil
		}
	}
	s.m = member{rid: m.rid, key: m.key, ix: m.ix, tb: m.tb, doc: d, score: m.score}
	return &s.m, advanced, nil
}

func (s *fetch) close() error { return nil }
func (s *fetch) describe(d *doc, withStats bool) {
	put(d, "stage", "FETCH")
	if len(s.rawFilter) > 5 {
		put(d, "filter", bson.Raw(s.rawFilter))
	}
	if withStats {
		addCommon(d, &s.stats)
		put(d, "docsExamined", s.docs)
		put(d, "alreadyHasObj", s.hadObj)
	}
}

// orStage returns the union of its inputs' records, each once (MongoDB's
// OR).
type orStage struct {
	stageStats
	in        []stage
	i         int
	seen      map[string]struct{}
	dupsTests int64
	dupsDrop  int64
}

func (s *orStage) work(x *execCtx) (*member, state, error) {
	if s.i >= len(s.in) {
		return nil, isEOF, nil
	}
	m, st, err := step(x, s.in[s.i])
	if err != nil {
		return nil, isEOF, err
	}
	switch st {
	case isEOF:
		s.i++
		if s.i >= len(s.in) {
			return nil, isEOF, nil
		}
		return nil, needTime, nil
	case needTime:
		return nil, needTime, nil
	}
	if s.seen == nil {
		s.seen = map[string]struct{}{}
	}
	s.dupsTests++
	if _, dup := s.seen[string(m.rid)]; dup {
		s.dupsDrop++
		return nil, needTime, nil
	}
	s.seen[string(m.rid)] = struct{}{}
	return m, advanced, nil
}

func (s *orStage) children() []stage { return s.in }
func (s *orStage) close() error      { return nil }
func (s *orStage) describe(d *doc, withStats bool) {
	put(d, "stage", "OR")
	if withStats {
		addCommon(d, &s.stats)
		put(d, "dupsTested", s.dupsTests)
		put(d, "dupsDropped", s.dupsDrop)
	}
}

// sortStage is a blocking sort, top-k when a limit is known (MongoDB's
// SORT, with limitAmount).
type sortStage struct {
	stageStats
	oneInput
	sort         *query.Sort
	raw          bsoncore.Document
	limit        int64
	memLimit     int64
	allowDiskUse bool
	sorter       *query.Sorter
	it           *query.SortIterator
	m            member
	n            int64
	bytes        int64 // BSON bytes of the documents sorted
	// carry: keep each record's identity and key through the sort, for
	// returnKey and showRecordId (see returnkey.go); scans numbers the
	// index scans the records came from.
	carry bool
	scans []*ixScan
	buf   []byte
}

func (s *sortStage) work(x *execCtx) (*member, state, error) {
	if s.sorter == nil {
		s.sorter = query.NewSorter(s.sort, query.SorterOptions{Limit: s.limit, MaxMemory: s.memLimit, AllowDiskUse: s.allowDiskUse})
	}
	if s.it == nil {
		m, st, err := step(x, s.in())
		if err != nil {
			return nil, isEOF, err
		}
		switch st {
		case advanced:
			s.n++
			s.bytes += int64(len(m.doc))
			if s.carry {
				s.buf = appendCarry(s.buf[:0], m, &s.scans)
				return nil, needTime, s.sorter.Add(s.buf)
			}
			return nil, needTime, s.sorter.Add(m.doc)
		case needTime:
			return nil, needTime, nil
		}
		s.it = s.sorter.Iter()
		return nil, needTime, nil
	}
	if s.it.Next() {
		s.m = member{doc: s.it.Doc()}
		if s.carry {
			s.m = restoreCarry(s.m.doc, s.scans)
		}
		return &s.m, advanced, nil
	}
	return nil, isEOF, s.it.Err()
}

func (s *sortStage) close() error {
	if s.sorter == nil {
		return nil
	}
	return s.sorter.Close()
}
func (s *sortStage) describe(d *doc, withStats bool) {
	put(d, "stage", "SORT")
	put(d, "sortPattern", bson.Raw(s.raw))
	put(d, "memLimit", s.memLimit)
	if s.limit > 0 {
		put(d, "limitAmount", s.limit)
	}
	put(d, "type", "simple")
	if withStats {
		addCommon(d, &s.stats)
		put(d, "totalDataSizeSorted", s.bytes)
	}
}

// skipStage drops the first n results (MongoDB's SKIP).
type skipStage struct {
	stageStats
	oneInput
	n, left int64
}

func (s *skipStage) work(x *execCtx) (*member, state, error) {
	m, st, err := step(x, s.in())
	if st != advanced || err != nil {
		return nil, st, err
	}
	if s.left > 0 {
		s.left--
		return nil, needTime, nil
	}
	return m, advanced, nil
}

func (s *skipStage) close() error { return nil }
func (s *skipStage) describe(d *doc, withStats bool) {
	put(d, "stage", "SKIP")
	put(d, "skipAmount", s.n)
	if withStats {
		addCommon(d, &s.stats)
	}
}

// limitStage returns at most n results (MongoDB's LIMIT).
type limitStage struct {
	stageStats
	oneInput
	n   int64
	got int64
}

func (s *limitStage) work(x *execCtx) (*member, state, error) {
	if s.got >= s.n {
		return nil, isEOF, nil
	}
	m, st, err := step(x, s.in())
	if st == advanced {
		s.got++
	}
	return m, st, err
}

func (s *limitStage) close() error { return nil }
func (s *limitStage) describe(d *doc, withStats bool) {
	put(d, "stage", "LIMIT")
	put(d, "limitAmount", s.n)
	if withStats {
		addCommon(d, &s.stats)
	}
}

// projection shapes each document (MongoDB's PROJECTION_SIMPLE and
// PROJECTION_DEFAULT). A positional projection needs the array position
// the filter bound, recomputed here because sorting detaches documents
// from their match.
type projection struct {
	stageStats
	oneInput
	name       string
	proj       *query.Projection
	raw        bsoncore.Document
	filter     *query.Filter
	positional bool
	buf        []byte
	m          member
}

func (s *projection) work(x *execCtx) (*member, state, error) {
	m, st, err := step(x, s.in())
	if st != advanced || err != nil {
		return nil, st, err
	}
	pos := -1
	if s.positional {
		_, pos = s.filter.MatchDetails(m.doc)
	}
	if s.buf, err = s.proj.Apply(s.buf[:0], m.doc, pos); err != nil {
		return nil, isEOF, err
	}
	s.m = member{rid: m.rid, doc: s.buf}
	return &s.m, advanced, nil
}

func (s *projection) close() error { return nil }
func (s *projection) describe(d *doc, withStats bool) {
	put(d, "stage", s.name)
	put(d, "transformBy", bson.Raw(s.raw))
	if withStats {
		addCommon(d, &s.stats)
	}
}

// shardingFilter keeps the documents of chunks this shard owns (MongoDB's
// SHARDING_FILTER): a read that carries a shardVersion returns no orphans
// (a migration's copy before its commit, a donated range before its
// deletion). It sits right above the stage that yields documents.
type shardingFilter struct {
	stageStats
	oneInput
	owned func(bsoncore.Document) bool
	skips int64 // documents dropped (MongoDB's chunkSkips)
}

func (s *shardingFilter) work(x *execCtx) (*member, state, error) {
	m, st, err := step(x, s.in())
	if st != advanced || err != nil {
		return nil, st, err
	}
	if !s.owned(m.doc) {
		s.skips++
		return nil, needTime, nil
	}
	return m, advanced, nil
}

func (s *shardingFilter) close() error { return nil }
func (s *shardingFilter) describe(d *doc, withStats bool) {
	put(d, "stage", "SHARDING_FILTER")
	if withStats {
		addCommon(d, &s.stats)
		put(d, "chunkSkips", s.skips)
	}
}
