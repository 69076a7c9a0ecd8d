package planner

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/collation"
	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/keystring"
)

// Collations and indexes, as MongoDB plans them:
//
//   - An index whose collation is the query's bounds every condition, its
//     strings encoded as collation keys (keystring.AppendCollated), and
//     gives order. Its bounds are never exact: FETCH rechecks each
//     condition with the query's collation, and the index never covers.
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
