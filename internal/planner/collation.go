package planner

import (
	"bytes"
	"slices"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/collation"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/keystring"
)

// Collations and indexes, as MongoDB plans them:
//
//   - An index whose collation is the query's bounds every condition, its
//     strings encoded as collation keys (keystring.AppendCollated), and
//     gives order. Keys order as the collation compares (invariant "Keys
//     order as Compare", package collation), so the bounds of its first
//     field are exact when they hold all of the field's conditions (one,
//     or a string range): FETCH rechecks the others with the query's
//     collation. The index never covers (a key does not decode to its
//     string).
//     Its intervals come from the simple order (interval.go), so each
//     field is bounded by one condition (never an intersection), and the
//     encoded ranges are put in key order and merged (keyOrder): points
//     of an $in may order otherwise under the collation, and some may be
//     one key.
//   - An index whose collation differs bounds only conditions whose
//     operands collations cannot change (numbers, dates, ObjectIds, …):
//     a condition on a string, symbol, document or array, a regex or an
//     $in holding one leaves the field unbounded. It gives no order.
//
// The _id index is always simple in Cairn (documents are keyed by
// keystring(_id)), so a query with a collation reads a string _id through
// a scan rather than the point read (pointID).

// sameCollation reports whether ix orders strings as coll does.
func sameCollation(ix *indexRef, coll *collation.Collator) bool {
	return collation.Equal(ix.spec.Collation, coll)
}

// collationBounds reports whether the conditions on a field may bound a
// scan of ix under the analysed query's collation.
func collationBounds(a *analysis, ix *indexRef, conds []cond) bool {
	if sameCollation(ix, a.coll) {
		return true
	}
	for _, c := range conds {
		if c.op == "$regex" || collatable(c.v) {
			return false
		}
		for _, x := range c.list {
			if collatable(x) {
				return false
			}
		}
	}
	return true
}

// collatable reports a value whose comparison a collation changes: a
// string or symbol, or a document or array (which may hold one), or a
// regex (whose bounds are string ranges).
func collatable(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeString, bsoncore.TypeSymbol, bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray, bsoncore.TypeRegex:
		return true
	}
	return false
}

// collatorOf is the keystring collator of spec's keys: nil (not a nil
// pointer in an interface) for the simple collation.
func collatorOf(spec *index.Spec) keystring.Collator {
	if spec.Collation == nil {
		return nil
	}
	return spec.Collation
}

// keyOrder sorts ranges by their low key and merges those that overlap or
// touch, so that a scan reads each key once and in key order. A range
// whose ends came out inverted under the collation is empty and drops
// out. Nil ends are unbounded (below, above everything).
func keyOrder(ranges []engine.KeyRange) []engine.KeyRange {
	var out []engine.KeyRange
	for _, r := range ranges {
		if r.Hi != nil && bytes.Compare(r.Lo, r.Hi) >= 0 {
			continue
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b engine.KeyRange) int { return bytes.Compare(a.Lo, b.Lo) })
	merged := out[:0]
	for _, r := range out {
		if n := len(merged); n > 0 {
			last := &merged[n-1]
			if last.Hi == nil || bytes.Compare(r.Lo, last.Hi) <= 0 {
				if last.Hi != nil && (r.Hi == nil || bytes.Compare(r.Hi, last.Hi) > 0) {
					last.Hi = r.Hi
				}
				continue
			}
		}
		merged = append(merged, r)
	}
	return merged
}

// collatedRange is the one interval of a lower and an upper bound that are
// both strings ({$gte: "b", $lt: "c"}), for a collated index: its ends are
// encoded as collation keys, so the interval is the collation's, whatever
// the simple order of its ends (an interval inverted under the collation
// is empty: keyOrder drops it). ok is false for any other conditions.
func collatedRange(conds []cond) (OIL, bool) {
	if len(conds) != 2 {
		return nil, false
	}
	var iv Interval
	var lo, hi bool
	for _, c := range conds {
		if c.v.Type != bsoncore.TypeString {
			return nil, false
		}
		switch c.op {
		case "$gt", "$gte":
			iv.Lo, iv.LoIncl, lo = c.v, c.op == "$gte", true
		case "$lt", "$lte":
			iv.Hi, iv.HiIncl, hi = c.v, c.op == "$lte", true
		default:
			return nil, false
		}
	}
	if !lo || !hi {
		return nil, false
	}
	return OIL{iv}, true
}

// collatedExact reports whether the bounds of field i of a collated index
// are exact: the first field (always decided by the scan's ranges, which
// are collation keys), bounded by all its conditions (one, or a string
// range read whole). Later fields' keys are never checked against their
// bounds (newIXScan), so FETCH checks them.
func collatedExact(i, conds int, wholeRange bool) bool {
	return i == 0 && (conds == 1 || wholeRange)
}
