package exec

import (
	"context"
	"fmt"
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/opctx"
)

// The input of a pipeline that starts with $versions: a scan of the
// collection's history (engine.Reader.Versions), narrowed by a $match right
// after it on _id (an equality) and the version field (comparisons). The
// $match still runs above the scan ("Push-down keeps results"): the bounds
// only spare reading versions it would drop.

// startsWithVersions reports whether a pipeline's first stage is $versions.
func startsWithVersions(stages []bsoncore.Document) bool {
	if len(stages) == 0 {
		return false
	}
	el, err := stages[0].IndexErr(0)
	return err == nil && el.Key() == "$versions"
}

// VersionsScan is a pipeline's input read from a collection's history; it
// is an agg.Source.
type VersionsScan struct {
	ctx    context.Context
	rd     *engine.Reader
	cur    *engine.VersionCursor
	field  string
	Bounds engine.VersionBounds
	// NReturned counts the versions returned.
	NReturned int64
	buf       []byte

	// owns is the shard's SHARDING_FILTER (nil: none). A history is one
	// document's, whole: it is this shard's when the document's newest
	// live version is in a chunk this shard owns (ownsHistory), so that
	// a migration's copies and a donated range not yet deleted show no
	// versions through a router.
	owns     func(bsoncore.Document) bool
	ownID    []byte // the _id last judged
	ownKept  bool   // and whether its versions are this shard's
	ownProbe []byte
}

// openVersions opens the history scan of a pipeline starting with
// $versions (stages[0]); the stage after it may narrow it.
func (e *Env) openVersions(ctx context.Context, ns engine.Namespace, stages []bsoncore.Document) (*VersionsScan, error) {
	rd, err := e.eng.NewReader(ns)
	if err != nil {
		return nil, err
	}
	ver, ok := rd.Versioning()
	if !ok && rd.Exists() {
		_ = rd.Close()
		return nil, mongoerr.New(mongoerr.InvalidOptions, "$versions requires a versioned collection; %s is not versioned (create it, or collMod it, with versioning: {enabled: true})", ns)
	}
	s := &VersionsScan{ctx: ctx, rd: rd, field: ver.Field, Bounds: engine.AllVersions, owns: e.OwnedFilter(ns)}
	if len(stages) > 1 {
		if m, ok := stageArg(stages[1], "$match"); ok {
			s.Bounds = versionBounds(m, ver.Field)
		}
	}
	if s.cur, err = rd.Versions(s.Bounds); err != nil {
		_ = rd.Close()
		return nil, err
	}
	return s, nil
}

// versionBounds reads, from a $match's top-level fields, an _id equality
// and comparisons of the version field with whole numbers; anything else
// leaves the bounds open.
func versionBounds(m bsoncore.Document, field string) engine.VersionBounds {
	b := engine.AllVersions
	elems, err := m.Elements()
	if err != nil {
		return b
	}
	for _, el := range elems {
		switch el.Key() {
		case "_id":
			if id, ok := equalityValue(el.Value()); ok {
				b.IDKey = keystring.Append(nil, id)
			}
		case field:
			v := el.Value()
			if n, ok := wholeNumber(v); ok {
				narrow(&b, "$eq", n)
				continue
			}
			d, ok := v.DocumentOK()
			if !ok {
				continue
			}
			ops, _ := d.Elements()
			for _, op := range ops {
				if n, ok := wholeNumber(op.Value()); ok {
					narrow(&b, op.Key(), n)
				}
			}
		}
	}
	return b
}

// equalityValue is the value a filter field's condition equals: a plain
// value (not an operator document, not a regex, not an array: an array
// would also match documents holding it as an element) or {$eq: value}.
func equalityValue(v bsoncore.Value) (bsoncore.Value, bool) {
	switch v.Type {
	case bsoncore.TypeRegex, bsoncore.TypeArray:
		return v, false
	case bsoncore.TypeEmbeddedDocument:
		d := v.Document()
		el, err := d.IndexErr(0)
		if err != nil || len(el.Key()) == 0 || el.Key()[0] != '$' {
			return v, true // a document _id
		}
		if els, _ := d.Elements(); len(els) == 1 && el.Key() == "$eq" {
			return equalityValue(el.Value())
		}
		return v, false
	}
	return v, true
}

// wholeNumber reads a number that is a whole value.
func wholeNumber(v bsoncore.Value) (int64, bool) {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		return bsonx.AsInt64(v)
	case bsoncore.TypeDouble:
		f := v.Double()
		if f == math.Trunc(f) && math.Abs(f) < 1<<62 {
			return int64(f), true
		}
	}
	return 0, false
}

// narrow intersects b's version range with one comparison.
func narrow(b *engine.VersionBounds, op string, n int64) {
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	switch op {
	case "$eq":
		lo, hi = n, n
	case "$lt":
		hi = n - 1
	case "$lte":
		hi = n
	case "$gt":
		lo = n + 1
	case "$gte":
		lo = n
	default:
		return
	}
	if lo > 0 && uint64(lo) > b.VLo {
		b.VLo = uint64(lo)
	}
	if hi < 0 {
		b.VHi, b.VLo = 0, 1 // empty
	} else if uint64(hi) < b.VHi {
		b.VHi = uint64(hi)
	}
}

// Next returns the next version as {_id, <field>, validFrom, validTo, op, doc}.
func (s *VersionsScan) Next() (bsoncore.Document, error) {
	if err := opctx.Err(s.ctx); err != nil {
		return nil, err
	}
	v, ok, err := s.cur.Next()
	for ; err == nil && ok && s.owns != nil; v, ok, err = s.cur.Next() {
		if kept, err := s.ownsHistory(v.IDKey); err != nil {
			return nil, err
		} else if kept {
			break
		}
	}
	if err != nil || !ok {
		return nil, err
	}
	id, err := v.ID()
	if err != nil {
		return nil, err
	}
	s.NReturned++
	idx, b := bsoncore.AppendDocumentStart(s.buf[:0])
	b = bsoncore.AppendValueElement(b, "_id", id)
	b = bsoncore.AppendInt64Element(b, s.field, int64(v.V))
	b = bsoncore.AppendTimestampElement(b, "validFrom", uint32(v.ValidFrom>>32), uint32(v.ValidFrom))
	if v.ValidTo == 0 {
		b = bsoncore.AppendNullElement(b, "validTo")
	} else {
		b = bsoncore.AppendTimestampElement(b, "validTo", uint32(v.ValidTo>>32), uint32(v.ValidTo))
	}
	b = bsoncore.AppendStringElement(b, "op", engine.OpName(v.Op))
	if v.Doc == nil {
		b = bsoncore.AppendNullElement(b, "doc")
	} else {
		b = bsoncore.AppendDocumentElement(b, "doc", v.Doc)
	}
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	s.buf = b
	return b, nil
}

// ownsHistory reports whether the history of the document idKey is this
// shard's: its newest live version is in an owned chunk; with only a
// tombstone retained, a document {_id} stands for it (which decides when
// the shard key is _id), as the migrations decide (shardsvr/versioned.go).
func (s *VersionsScan) ownsHistory(idKey []byte) (bool, error) {
	if s.ownID != nil && string(s.ownID) == string(idKey) {
		return s.ownKept, nil
	}
	s.ownID = append(s.ownID[:0], idKey...)
	doc, err := s.rd.LastLive(idKey)
	if err != nil {
		return false, err
	}
	if doc == nil {
		id, _, err := keystring.Decode(idKey)
		if err != nil {
			return false, err
		}
		idx, b := bsoncore.AppendDocumentStart(s.ownProbe[:0])
		b = bsoncore.AppendValueElement(b, "_id", id)
		b, _ = bsoncore.AppendDocumentEnd(b, idx)
		s.ownProbe, doc = b, b
	}
	s.ownKept = s.owns(doc)
	return s.ownKept, nil
}

// KeysExamined counts the history keys read.
func (s *VersionsScan) KeysExamined() int64 { return s.cur.KeysExamined }

// BoundsString renders the scan's bounds for explain.
func (s *VersionsScan) BoundsString() (id, versions string) {
	id = "[MinKey, MaxKey]"
	if s.Bounds.IDKey != nil {
		if v, _, err := keystring.Decode(s.Bounds.IDKey); err == nil {
			id = fmt.Sprintf("[%s, %s]", v, v)
		}
	}
	lo, hi := "1", "inf"
	if s.Bounds.VLo > 1 {
		lo = fmt.Sprint(s.Bounds.VLo)
	}
	if s.Bounds.VHi != math.MaxUint64 {
		hi = fmt.Sprint(s.Bounds.VHi)
	}
	return id, "[" + lo + ", " + hi + "]"
}

// Close releases the scan and its snapshot.
func (s *VersionsScan) Close() error {
	err := s.cur.Close()
	if cerr := s.rd.Close(); err == nil {
		err = cerr
	}
	return err
}

// ExplainVersions opens the history scan of a pipeline that starts with
// $versions for explain and, when execute, reads it to the end so that its
// counts are true. It returns the stages after $versions.
func (e *Env) ExplainVersions(ctx context.Context, a Aggregate, execute bool) (*VersionsScan, []bsoncore.Document, error) {
	a.Opts.Catalog = aggCatalog{e: e}
	if _, err := agg.Parse(a.Stages, a.Opts); err != nil {
		return nil, nil, err
	}
	s, err := e.openVersions(ctx, a.NS, a.Stages)
	if err != nil {
		return nil, nil, err
	}
	if execute {
		for {
			d, err := s.Next()
			if err != nil {
				_ = s.Close()
				return nil, nil, err
			}
			if d == nil {
				break
			}
		}
	}
	return s, a.Stages[1:], nil
}

// StartsWithVersions reports whether a pipeline's first stage is $versions.
func StartsWithVersions(stages []bsoncore.Document) bool { return startsWithVersions(stages) }

// RevertDocument makes version v of a versioned document its latest again
// (engine.RevertDocument), for the revertDocument command.
func (e *Env) RevertDocument(ns engine.Namespace, id bsoncore.Value, v uint64) (uint64, error) {
	return e.eng.RevertDocument(ns, id, v)
}
