package planner

import (
	"bytes"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/invariants"
	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/query"
)

// maxRanges caps how many key ranges the bounds of one scan expand to (the
// product of the point lists of a compound key's leading fields); beyond
// it the scan reads a shorter prefix and checks the rest key by key,
// seeking past the keys the first checked field's bounds exclude (skip).
var maxRanges = 4096 // a variable only so that BenchmarkLongIn can compare limits (export_test.go)

// indexRef is an index as a plan uses it: the _id index (the document
// keyspace itself) or a secondary index.
type indexRef struct {
	name     string
	spec     *index.Spec
	multikey bool
	isID     bool
	building bool
	typeBits bool // entries carry their keys' type bits (engine.IndexInfo.TypeBits)

	// mk says which paths held arrays when mkKnown (catalog.Index's
	// multikey record); otherwise every path of a multikey index counts as
	// multikey.
	mk      index.Multikey
	mkKnown bool

	// A wildcard index serves one path per plan, as MongoDB expands it:
	// wildPath is that path, and fields and keyPattern are the two-part
	// key the scan reads ({$_path: 1, <path>: 1}).
	wildPath     string
	wildPrefixes []string // the prefixes of wildPath that held arrays
	fields       []index.Field
	keyPattern   bsoncore.Document
}

// keyFields is the key pattern the scan reads.
func (ix *indexRef) keyFields() []index.Field {
	if ix.fields != nil {
		return ix.fields
	}
	return ix.spec.KeyPattern
}

// keyDoc is the key pattern explain shows.
func (ix *indexRef) keyDoc() bsoncore.Document {
	if ix.keyPattern != nil {
		return ix.keyPattern
	}
	return ix.spec.Key
}

// fieldMultikey reports whether the path of key field i may hold arrays.
func (ix *indexRef) fieldMultikey(i int) bool {
	if !ix.multikey || !ix.mkKnown || ix.wildPath != "" {
		return ix.multikey
	}
	return i < len(ix.mk.Components) && len(ix.mk.Components[i]) > 0
}

// multikeyPrefixes lists the prefixes of key field i's path that held
// arrays; when unknown, its first component stands for any.
func (ix *indexRef) multikeyPrefixes(i int) []string {
	f := ix.keyFields()[i]
	if !ix.mkKnown {
		return f.Parts[:1]
	}
	return ix.spec.PathNames(ix.mk)[i]
}

// shareMultikeyPrefix reports whether key fields i and j reach a common
// array: a multikey prefix of one is a prefix of both paths.
func (ix *indexRef) shareMultikeyPrefix(i, j int) bool {
	fields := ix.keyFields()
	for _, k := range []int{i, j} {
		for _, p := range ix.multikeyPrefixes(k) {
			if underPath(fields[i].Path, p) && underPath(fields[j].Path, p) {
				return true
			}
		}
	}
	return false
}

// underPath reports whether path is p or lies below it.
func underPath(path, p string) bool {
	return path == p || strings.HasPrefix(path, p+".")
}

// wildcardRef is wildcard index ix as it serves conditions on path: the
// path is multikey when it, or a prefix of it, held an array.
func wildcardRef(ix *indexRef, path string) *indexRef {
	kind, dir := index.Ascending, int32(1)
	if ix.spec.WildcardDescending() {
		kind, dir = index.Descending, -1
	}
	var prefixes []string
	for _, p := range ix.mk.Paths {
		if underPath(path, p) {
			prefixes = append(prefixes, p)
		}
	}
	multikey := ix.multikey && (!ix.mkKnown || len(prefixes) > 0)
	return &indexRef{
		name: ix.name, spec: ix.spec, multikey: multikey, building: ix.building,
		mk: index.Multikey{Components: [][]int{nil, nil}}, mkKnown: ix.mkKnown,
		wildPrefixes: prefixes,
		wildPath:     path,
		fields: []index.Field{
			{Path: wildcardPathField, Parts: []string{wildcardPathField}, Kind: index.Ascending},
			{Path: path, Parts: strings.Split(path, "."), Kind: kind},
		},
		keyPattern: bsoncore.NewDocumentBuilder().AppendInt32(wildcardPathField, 1).AppendInt32(path, dir).Build(),
	}
}

// wildcardPathField names the path part of a wildcard key in explain.
const wildcardPathField = "$_path"

// idSpec is the _id index's specification.
var idSpec = func() *index.Spec {
	d := bsoncore.NewDocumentBuilder().
		AppendDocument("key", bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()).
		AppendString("name", "_id_").Build()
	s, err := index.ParseSpec(d)
	if err != nil {
		panic("planner: the _id index specification does not parse: " + err.Error())
	}
	return s
}()

// ixScan reads the entries of an index within bounds (MongoDB's IXSCAN):
// the bounds expand to key ranges over a prefix of the key, and fields
// after that prefix are checked key by key.
type ixScan struct {
	stageStats
	ix      *indexRef
	bounds  []OIL // per key pattern field, in value order
	reverse bool
	keepTB  bool // pass each entry's type bits up (returnKey)

	ranges    []engine.KeyRange
	checkFrom int    // fields from here with bounds are checked per key
	ordered   []bool // per bound: ordered, so check searches it (set at the first check)
	dedup     bool
	misses    int // consecutive keys whose field checkFrom missed its bounds (see skip)

	ri        int
	cur       *engine.Cursor
	seen      map[string]struct{}
	keys      int64
	seeks     int64
	dupsTests int64
	dupsDrop  int64
	m         member

	minMax [2]bsoncore.Document // find's min and max, when they set the range

	// cover: the scan answers from keys (see covered.go), applying filter
	// to documents rebuilt from them.
	cover     bool
	filter    *query.Filter
	rawFilter bsoncore.Document
	docs      int64 // documents fetched because a key could not stand for one
	buf       []byte

	// countOnly: the results are only counted (COUNT_SCAN); each is an
	// empty document.
	countOnly bool

	// clustered: an _id scan of a clustered collection, which explain
	// shows with its FETCH as one CLUSTERED_IXSCAN (clustered.go).
	clustered bool

	// distinct: return only the first entry of each value of the first
	// field (DISTINCT_SCAN, distinct.go). After each result the scan
	// resumes at resume, the rest of curRng past that value; the cursor
	// moves there at the next work, since the result's key and record id
	// live in the cursor until then.
	distinct bool
	curRng   engine.KeyRange
	seekNext bool
	resume   *engine.KeyRange
}

var emptyDoc = bsoncore.Document{5, 0, 0, 0, 0}

func newIXScan(ix *indexRef, bounds []OIL, reverse bool) *ixScan {
	s := &ixScan{ix: ix, bounds: bounds, reverse: reverse, dedup: ix.multikey}
	s.ranges, s.checkFrom = keyRanges(ix.keyFields(), bounds, collatorOf(ix.spec))
	if ix.spec.Collation != nil {
		// Later fields' keys are collation keys, which do not decode to
		// the values their bounds name: FETCH checks them (their bounds
		// are never exact, see collation.go).
		s.checkFrom = len(bounds)
		s.ranges = keyOrder(s.ranges)
	}
	return s
}

// keyRanges expands bounds to ranges of encoded keys in key order: every
// combination of the points of the leading point-only fields, then the
// intervals of the next field. checkFrom is the first field the ranges do
// not decide. On a collated index (coll not nil) the first field's
// intervals are all expanded, however many: its keys are collation keys,
// which the scan cannot check against the bounds, and FETCH counts on the
// ranges to decide that field (collatedExact).
func keyRanges(fields []index.Field, bounds []OIL, coll keystring.Collator) ([]engine.KeyRange, int) {
	prefixes := [][]byte{nil}
	for i, o := range bounds {
		desc := fields[i].Kind == index.Descending
		ivs := o.intervals()
		if desc {
			ivs = o.reversed()
		}
		if o.IsFull() {
			return wholePrefixes(prefixes), i
		}
		if len(prefixes)*len(ivs) > maxRanges && (i > 0 || coll == nil) {
			return wholePrefixes(prefixes), i
		}
		if !o.allPoints() || i == len(bounds)-1 {
			var out []engine.KeyRange
			for _, p := range prefixes {
				for _, iv := range ivs {
					out = append(out, intervalRange(p, iv, desc, coll))
				}
			}
			return out, i + 1
		}
		next := make([][]byte, 0, len(prefixes)*len(ivs))
		for _, p := range prefixes {
			for _, iv := range ivs {
				next = append(next, encodePart(append([]byte(nil), p...), iv.Lo, desc, coll))
			}
		}
		prefixes = next
	}
	return wholePrefixes(prefixes), len(bounds)
}

func encodePart(dst []byte, v bsoncore.Value, desc bool, coll keystring.Collator) []byte {
	if desc {
		return keystring.AppendDescCollated(dst, v, coll)
	}
	return keystring.AppendCollated(dst, v, coll)
}

// wholePrefixes is every key starting with one of the prefixes.
func wholePrefixes(prefixes [][]byte) []engine.KeyRange {
	out := make([]engine.KeyRange, len(prefixes))
	for i, p := range prefixes {
		out[i] = engine.KeyRange{Lo: p, Hi: prefixEnd(p)}
	}
	return out
}

// intervalRange is the keys after prefix p whose next part lies in iv
// (given in key order: Lo encodes below Hi). Encodings are self-delimiting,
// so the keys whose part equals v are exactly those starting with p‖enc(v).
func intervalRange(p []byte, iv Interval, desc bool, coll keystring.Collator) engine.KeyRange {
	lo := encodePart(append([]byte(nil), p...), iv.Lo, desc, coll)
	if !iv.LoIncl {
		lo = prefixEnd(lo)
	}
	hi := encodePart(append([]byte(nil), p...), iv.Hi, desc, coll)
	if iv.HiIncl {
		hi = prefixEnd(hi)
	}
	return engine.KeyRange{Lo: lo, Hi: hi}
}

// prefixEnd is the smallest key above every key starting with p; nil (no
// bound) for an empty or all-0xff p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

func (s *ixScan) work(x *execCtx) (*member, state, error) {
	if s.seekNext {
		s.seekNext = false
		if err := s.close(); err != nil {
			return nil, isEOF, err
		}
	}
	for s.cur == nil || !s.cur.Next() {
		if s.cur != nil {
			if err := s.cur.Close(); err != nil {
				return nil, isEOF, err
			}
			s.cur = nil
		}
		rng, ok := s.nextRange()
		if !ok {
			return nil, isEOF, nil
		}
		s.curRng = rng
		s.seeks++
		var err error
		if s.ix.isID {
			s.cur, err = x.r.Docs(rng, s.reverse)
		} else {
			s.cur, err = x.r.Entries(s.ix.name, rng, s.reverse)
		}
		if err != nil {
			return nil, isEOF, err
		}
	}
	s.keys++
	var key, rid []byte
	var d bsoncore.Document
	if s.ix.isID {
		key, rid = s.cur.Key(), s.cur.Key()
		v, err := s.cur.Value()
		if err != nil {
			return nil, isEOF, err
		}
		d = v
	} else {
		var err error
		if key, rid, err = s.cur.IndexKey(); err != nil {
			return nil, isEOF, err
		}
	}
	if s.checkFrom < len(s.bounds) {
		ok, err := s.check(key)
		if err != nil || !ok {
			return nil, needTime, err
		}
	}
	if s.dedup {
		if s.seen == nil {
			s.seen = map[string]struct{}{}
		}
		s.dupsTests++
		if _, dup := s.seen[string(rid)]; dup {
			s.dupsDrop++
			return nil, needTime, nil
		}
		s.seen[string(rid)] = struct{}{}
	}
	if s.cover {
		var err error
		if d, err = s.covered(x, key, rid); err != nil || d == nil {
			return nil, needTime, err
		}
	}
	if s.countOnly {
		d = emptyDoc
	}
	if s.distinct {
		s.seekNext = true
		if rest, ok := s.skipPast(key); ok {
			s.resume = &rest
		}
	}
	s.m = member{rid: rid, key: key, ix: s, doc: d}
	if s.keepTB && s.ix.typeBits {
		var err error
		if s.m.tb, err = s.cur.TypeBits(); err != nil {
			return nil, isEOF, err
		}
	}
	return &s.m, advanced, nil
}

// nextRange is the key range to read next: the rest of the current one
// after a distinct scan's seek, else the next of the list; false at the
// end.
func (s *ixScan) nextRange() (engine.KeyRange, bool) {
	if s.resume != nil {
		rng := *s.resume
		s.resume = nil
		return rng, true
	}
	if s.ri >= len(s.ranges) {
		return engine.KeyRange{}, false
	}
	rng := s.ranges[s.ri]
	if s.reverse {
		rng = s.ranges[len(s.ranges)-1-s.ri]
	}
	s.ri++
	return rng, true
}

// covered rebuilds the document a key stands for (or fetches it, see
// covered.go) and applies the filter; nil when it does not match.
func (s *ixScan) covered(x *execCtx, key, rid []byte) (bsoncore.Document, error) {
	var vals []bsoncore.Value
	var err error
	if s.ix.typeBits {
		var tb []byte
		if tb, err = s.cur.TypeBits(); err == nil {
			vals, _, err = s.ix.spec.DecodeKeyTyped(key, tb)
		}
	} else {
		vals, _, err = s.ix.spec.DecodeKey(key)
	}
	if err != nil {
		return nil, err
	}
	var ok bool
	if s.buf, ok = keyDocument(s.buf[:0], s.ix.spec.KeyPattern, vals, s.ix.typeBits); !ok {
		var found bool
		if s.buf, found, err = x.r.Fetch(s.buf[:0], rid); err != nil || !found {
			return nil, err
		}
		s.docs++
	}
	if s.filter != nil {
		r, err := s.filter.Exec(s.buf)
		if err != nil || !r.Matched {
			return nil, err
		}
	}
	return s.buf, nil
}

// check tests the key's fields past the ranges against their bounds. A
// miss on field checkFrom may move the cursor on to the next key that
// field's bounds admit (skip).
func (s *ixScan) check(key []byte) (bool, error) {
	vals, _, err := s.ix.spec.DecodeKey(key)
	if err != nil {
		return false, err
	}
	if s.ordered == nil {
		s.ordered = make([]bool, len(s.bounds))
		for j, o := range s.bounds {
			s.ordered[j] = o.ordered()
		}
	}
	for j := s.checkFrom; j < len(s.bounds) && j < len(vals); j++ {
		o := s.bounds[j]
		if o.IsFull() {
			continue
		}
		if in := s.ordered[j] && o.containsOrdered(vals[j]) || !s.ordered[j] && o.contains(vals[j]); !in {
			if j == s.checkFrom && s.ordered[j] {
				return false, s.skip(key, vals[j])
			}
			return false, nil
		}
		if j == s.checkFrom {
			s.misses = 0
		}
	}
	return true, nil
}

// skipAfter is how many keys in a row field checkFrom of a scan may miss
// its bounds before the scan seeks to the next key they admit instead of
// stepping on: a seek costs several steps, so neighbouring intervals are
// stepped to, distant ones sought (BENCHMARKS.md, session 17's pl20, holds
// the measurements that chose it).
var skipAfter = 1

// skip is called on key, whose field checkFrom holds v, outside that
// field's (ordered) bounds. After skipAfter such keys in a row it moves
// the cursor, as MongoDB's IndexBoundsChecker does, to the first key in
// the scan's direction that lies in the next interval of the field under
// the same values of the earlier fields (the same key prefix), or past
// that prefix when no interval is left; the key the cursor lands on is
// examined (and counted) as any other. A scan whose ranges leave the
// leading field to the check (an $in of more than maxRanges values) so
// reads about as many keys as it has values, not the whole index.
func (s *ixScan) skip(key []byte, v bsoncore.Value) error {
	if s.misses++; s.misses < skipAfter {
		return nil
	}
	s.misses = 0
	prefix := key
	for range s.checkFrom {
		n, err := keystring.Len(prefix)
		if err != nil {
			return err
		}
		prefix = prefix[n:]
	}
	prefix = key[:len(key)-len(prefix)]
	o := s.bounds[s.checkFrom]
	desc := s.ix.keyFields()[s.checkFrom].Kind == index.Descending
	// The intervals from search(v) on lie above v in value order; the scan
	// meets values in increasing order when its direction and the
	// field's agree.
	j := o.search(v)
	if s.reverse != desc {
		j--
	}
	var target []byte
	switch {
	case j >= 0 && j < len(o):
		iv := o[j]
		if desc {
			iv = Interval{Lo: iv.Hi, Hi: iv.Lo, LoIncl: iv.HiIncl, HiIncl: iv.LoIncl}
		}
		rng := intervalRange(prefix, iv, desc, collatorOf(s.ix.spec))
		target = rng.Lo
		if s.reverse {
			target = rng.Hi
		}
	case s.reverse:
		target = prefix
	default:
		target = prefixEnd(prefix)
	}
	if len(target) == 0 { // nothing left in the key order: the range is done
		return s.close()
	}
	if invariants.Enabled {
		if c := bytes.Compare(target, key); s.reverse && c > 0 || !s.reverse && c <= 0 {
			invariants.Fail("Skips go ahead", "index %s: a skip from key %x to %x (reverse %v) does not move on", s.ix.name, key, target, s.reverse)
		}
	}
	s.seeks++
	s.cur.Skip(target)
	return nil
}

func (s *ixScan) children() []stage { return nil }
func (s *ixScan) close() error {
	if s.cur == nil {
		return nil
	}
	err := s.cur.Close()
	s.cur = nil
	return err
}

func (s *ixScan) describe(d *doc, withStats bool) {
	spec := s.ix.spec
	switch {
	case s.countOnly:
		put(d, "stage", "COUNT_SCAN")
	case s.distinct:
		put(d, "stage", "DISTINCT_SCAN")
	default:
		put(d, "stage", "IXSCAN")
	}
	if s.cover && len(s.rawFilter) > 5 {
		put(d, "filter", bson.Raw(s.rawFilter))
	}
	put(d, "keyPattern", bson.Raw(s.ix.keyDoc()))
	put(d, "indexName", s.ix.name)
	put(d, "isMultiKey", s.ix.multikey)
	if paths, ok := s.ix.multiKeyPaths(); ok {
		put(d, "multiKeyPaths", paths)
	}
	put(d, "isUnique", spec.Unique)
	put(d, "isSparse", spec.Sparse)
	put(d, "isPartial", spec.PartialFilterExpression != nil)
	put(d, "indexVersion", int32(2))
	put(d, "direction", direction(s.reverse))
	put(d, "indexBounds", s.boundsDoc())
	if withStats {
		addCommon(d, &s.stats)
		put(d, "keysExamined", s.keys)
		put(d, "seeks", s.seeks)
		put(d, "dupsTested", s.dupsTests)
		put(d, "dupsDropped", s.dupsDrop)
		if s.cover {
			put(d, "docsExamined", s.docs)
		}
	}
}

// boundsDoc renders the bounds as MongoDB's indexBounds: per field, the
// intervals in the order the scan reads them.
func (s *ixScan) boundsDoc() doc {
	out := doc{}
	if s.minMax[0] != nil || s.minMax[1] != nil {
		return s.minMaxDoc()
	}
	for i, f := range s.ix.keyFields() {
		var o OIL
		if i < len(s.bounds) {
			o = s.bounds[i]
		}
		ivs := o.intervals()
		if (f.Kind == index.Descending) != s.reverse {
			ivs = o.reversed()
		}
		strs := bson.A{}
		for _, iv := range ivs {
			strs = append(strs, iv.String())
		}
		put(&out, f.Path, strs)
	}
	return out
}

// idKey is the storage encoding of an _id.
func idKey(v bsoncore.Value) []byte { return keystring.Append(nil, v) }

// minMaxDoc renders bounds set by min and max: per field, from its min
// value to its max value, the last field's max excluded.
func (s *ixScan) minMaxDoc() doc {
	out := doc{}
	fields := s.ix.spec.KeyPattern
	for i, f := range fields {
		iv := Interval{Lo: minKey, Hi: maxKey, LoIncl: true, HiIncl: true}
		if len(s.minMax[0]) > 5 {
			if el, err := s.minMax[0].IndexErr(uint(i)); err == nil {
				iv.Lo = el.Value()
			}
		}
		if len(s.minMax[1]) > 5 {
			if el, err := s.minMax[1].IndexErr(uint(i)); err == nil {
				iv.Hi = el.Value()
				iv.HiIncl = i < len(fields)-1
			}
		}
		put(&out, f.Path, bson.A{iv.String()})
	}
	return out
}

// multiKeyPaths renders explain's multiKeyPaths: per key field, the
// prefixes of its path that held arrays. ok is false when they are
// unknown (a multikey index from an older catalog); MongoDB, too, omits
// the field then.
func (ix *indexRef) multiKeyPaths() (doc, bool) {
	if ix.multikey && !ix.mkKnown {
		return nil, false
	}
	out := doc{}
	fields := ix.keyFields()
	var names [][]string
	if ix.wildPath == "" && !ix.isID {
		names = ix.spec.PathNames(ix.mk)
	}
	for i, f := range fields {
		arr := bson.A{}
		switch {
		case ix.wildPath != "" && i == 1:
			for _, p := range ix.wildPrefixes {
				arr = append(arr, p)
			}
		case i < len(names):
			for _, p := range names[i] {
				arr = append(arr, p)
			}
		}
		put(&out, f.Path, arr)
	}
	return out, true
}
