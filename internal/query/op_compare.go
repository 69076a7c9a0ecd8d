package query

import (
	"math"
	"slices"
	"sort"
	"sync/atomic"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Comparison operators: $eq $ne $gt $gte $lt $lte $in $nin, and the
// implicit equality of {a: 5}.
//
// A comparison only matches values of the same canonical type as its
// argument ("type bracketing": {$gt: 5} never matches a string), with
// MongoDB's exceptions: null and undefined are equal for $eq/$lte/$gte, a
// missing field counts as null, MinKey and MaxKey arguments compare with
// every type, and NaN equals NaN but is neither greater nor less than any
// number.

type cmpOp int

const (
	opEQ cmpOp = iota
	opLT
	opLTE
	opGT
	opGTE
)

var cmpOps = map[string]cmpOp{"$lt": opLT, "$lte": opLTE, "$gt": opGT, "$gte": opGTE}

type cmpPred struct {
	op     cmpOp
	rhs    bsoncore.Value
	rank   int
	rhsNaN bool
}

var nullValue = bsoncore.Value{Type: bsoncore.TypeNull}

func newCmp(op cmpOp, rhs bsoncore.Value) *cmpPred {
	c := cmpOf(op, rhs)
	return &c
}

func cmpOf(op cmpOp, rhs bsoncore.Value) cmpPred {
	return cmpPred{op: op, rhs: rhs, rank: bsonx.CanonicalType(rhs.Type), rhsNaN: isNaN(rhs)}
}

func (c *cmpPred) matchValue(v bsoncore.Value, st *state) bool {
	if v.Type == 0 {
		v = nullValue
	}
	if r := bsonx.CanonicalType(v.Type); r != c.rank {
		switch {
		case r+c.rank == bsonx.CanonicalType(bsoncore.TypeNull)+bsonx.CanonicalType(bsoncore.TypeUndefined) &&
			(v.Type == bsoncore.TypeNull || v.Type == bsoncore.TypeUndefined):
			return c.op == opEQ || c.op == opLTE || c.op == opGTE
		case c.rhs.Type == bsoncore.TypeMinKey || c.rhs.Type == bsoncore.TypeMaxKey:
			cmp := bsonx.Compare(v, c.rhs)
			switch c.op {
			case opLT, opLTE:
				return cmp < 0
			case opGT, opGTE:
				return cmp > 0
			}
		}
		return false
	}
	if c.rhsNaN || isNaN(v) {
		both := c.rhsNaN && isNaN(v)
		return both && (c.op == opEQ || c.op == opLTE || c.op == opGTE)
	}
	var coll bsonx.Collator
	if st != nil {
		coll = st.coll
	}
	cmp := bsonx.CompareWith(v, c.rhs, coll)
	switch c.op {
	case opEQ:
		return cmp == 0
	case opLT:
		return cmp < 0
	case opLTE:
		return cmp <= 0
	case opGT:
		return cmp > 0
	}
	return cmp >= 0
}

func isNaN(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeDouble:
		f, ok := v.DoubleOK()
		return ok && math.IsNaN(f)
	case bsoncore.TypeDecimal128:
		h, l, ok := v.Decimal128OK()
		return ok && bson.NewDecimal128(h, l).IsNaN()
	}
	return false
}

// inPred is $in: equality with any of a set of values, or a match of any
// of a set of regexes. The values are kept sorted so that a large $in costs
// a binary search, under a collation too: a copy sorted by the collation's
// order (values equal under it are neighbours there, not in the simple
// order) is made the first time the predicate matches under it.
type inPred struct {
	values  []bsoncore.Value // sorted by bsonx.Compare, NaN and nullish excluded
	nullish bool             // null or undefined is in the set: matches null, undefined, missing
	nan     bool
	regexes []*regexPred
	// collated is values sorted by bsonx.CompareWith under coll, for the
	// last collation the predicate matched under (a filter is matched
	// from several goroutines at once: each may sort, the last one kept).
	collated atomic.Pointer[collatedValues]
}

// collatedValues is an $in's values in a collation's order.
type collatedValues struct {
	coll   bsonx.Collator
	values []bsoncore.Value
}

// sortedUnder returns the values sorted by coll's order.
func (p *inPred) sortedUnder(coll bsonx.Collator) []bsoncore.Value {
	if c := p.collated.Load(); c != nil && c.coll == coll {
		return c.values
	}
	vs := slices.Clone(p.values)
	sort.SliceStable(vs, func(i, j int) bool { return bsonx.CompareWith(vs[i], vs[j], coll) < 0 })
	p.collated.Store(&collatedValues{coll: coll, values: vs})
	return vs
}

func parseIn(v bsoncore.Value, op string) (pred, error) {
	if v.Type != bsoncore.TypeArray {
		return nil, badValue("%s needs an array", op)
	}
	p := &inPred{}
	it := elemsOf(v)
	for {
		_, e, ok := it.next()
		if !ok {
			break
		}
		switch {
		case e.Type == bsoncore.TypeEmbeddedDocument && isOperatorDoc(e, false):
			return nil, badValue("cannot nest $ under %s", op)
		case e.Type == bsoncore.TypeRegex:
			re, err := regexFromValue(e)
			if err != nil {
				return nil, err
			}
			p.regexes = append(p.regexes, re)
		case e.Type == bsoncore.TypeNull || e.Type == bsoncore.TypeUndefined:
			p.nullish = true
		case isNaN(e):
			p.nan = true
		default:
			p.values = append(p.values, e)
		}
	}
	sort.SliceStable(p.values, func(i, j int) bool { return bsonx.Compare(p.values[i], p.values[j]) < 0 })
	return p, nil
}

func (p *inPred) matchValue(v bsoncore.Value, st *state) bool {
	switch {
	case v.Type == 0 || v.Type == bsoncore.TypeNull || v.Type == bsoncore.TypeUndefined:
		if p.nullish {
			return true
		}
	case isNaN(v):
		if p.nan {
			return true
		}
	case st.coll != nil:
		// Values equal under a collation need not be neighbours in the
		// simple order the set is sorted by: search the collation's.
		vs := p.sortedUnder(st.coll)
		i := sort.Search(len(vs), func(i int) bool { return bsonx.CompareWith(vs[i], v, st.coll) >= 0 })
		if i < len(vs) && bsonx.CompareWith(vs[i], v, st.coll) == 0 {
			return true
		}
	default:
		i := sort.Search(len(p.values), func(i int) bool { return bsonx.Compare(p.values[i], v) >= 0 })
		if i < len(p.values) && bsonx.Compare(p.values[i], v) == 0 {
			return true
		}
	}
	for _, re := range p.regexes {
		if re.matchValue(v, st) {
			return true
		}
	}
	return false
}

// Number helpers shared by the operators.

func isNumeric(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return true
	}
	return false
}

// integerValue returns v as an exact int64 when v is a number with an
// integral value that fits one.
func integerValue(v bsoncore.Value) (int64, bool) {
	switch v.Type {
	case bsoncore.TypeInt32:
		i, ok := v.Int32OK()
		return int64(i), ok
	case bsoncore.TypeInt64:
		return v.Int64OK()
	case bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		f, ok := bsonx.AsFloat64(v)
		if !ok || math.IsNaN(f) || f != math.Trunc(f) || f >= 0x1p63 || f < -0x1p63 {
			return 0, false
		}
		return int64(f), true
	}
	return 0, false
}

// integerArg is MongoDB's parseIntegerElementToLong, for operator
// arguments that must be whole numbers (FailedToParse otherwise).
func integerArg(v bsoncore.Value) (int64, error) {
	if !isNumeric(v) {
		return 0, mongoerr.New(mongoerr.FailedToParse, "Expected a number in: %s", v)
	}
	if i, ok := v.Int64OK(); ok && v.Type == bsoncore.TypeInt64 {
		return i, nil // exact: int64 max would round up to 2^63 as a double
	}
	f, _ := bsonx.AsFloat64(v)
	switch {
	case math.IsNaN(f):
		return 0, mongoerr.New(mongoerr.FailedToParse, "Expected an integer, but found NaN in: %s", v)
	case f >= 0x1p63 || f < -0x1p63:
		return 0, mongoerr.New(mongoerr.FailedToParse, "Cannot represent as a 64-bit integer: %s", v)
	}
	n, ok := integerValue(v)
	if !ok {
		return 0, mongoerr.New(mongoerr.FailedToParse, "Expected an integer: %s", v)
	}
	return n, nil
}
