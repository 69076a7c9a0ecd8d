package expr

import (
	"github.com/cairndb/cairn/internal/mongoerr"
	"slices"

	"github.com/cairndb/cairn/internal/keystring"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Set operators treat arrays as sets: duplicates count once and order is
// ignored; values are equal as aggregation compares them (1 equals 1.0),
// so membership is decided on keystring encodings, made with the context's
// collation (strings equal under it are one member). $setUnion and
// $setIntersection return their elements in ascending order (MongoDB
// collects them in an ordered set; its manual leaves the order
// unspecified); $setDifference keeps the first array's order.
// $setUnion, $setIntersection and $setDifference give null for a null or
// missing operand; $setEquals and $setIsSubset reject it. Also here:
// $anyElementTrue and $allElementsTrue, which read an array's elements as
// booleans.

func init() {
	register("$setUnion", collated(parseVariadic("$setUnion", nil), evalSetUnion))
	register("$setIntersection", collated(parseVariadic("$setIntersection", nil), evalSetIntersection))
	register("$setDifference", collated(parseFixed("$setDifference", 2, nil), evalSetDifference))
	register("$setEquals", parseSetEquals)
	register("$setIsSubset", collated(parseFixed("$setIsSubset", 2, nil), evalSetIsSubset))
	register("$anyElementTrue", parseFixed("$anyElementTrue", 1, evalElementsTrue(true)))
	register("$allElementsTrue", parseFixed("$allElementsTrue", 1, evalElementsTrue(false)))
}

const (
	codeAllElementsType    = mongoerr.AllElementsType
	codeAnyElementType     = mongoerr.AnyElementType
	codeSubsetSecondType   = mongoerr.SubsetSecondType
	codeSetUnionType       = mongoerr.SetUnionType
	codeSetEqualsType      = mongoerr.SetEqualsType
	codeSetEqualsArgs      = mongoerr.SetEqualsArgs
	codeSubsetFirstType    = mongoerr.SubsetFirstType
	codeIntersectionType   = mongoerr.IntersectionType
	codeDifferenceFirstTy  = mongoerr.DifferenceFirstType
	codeDifferenceSecondTy = mongoerr.DifferenceSecondType
)

// valueSet is a set of values with their first-appearance order, members
// equal under coll counting once.
type valueSet struct {
	keys  map[string]bool
	order []bsoncore.Value
	coll  Collator
}

func newValueSet(coll Collator) *valueSet { return &valueSet{keys: map[string]bool{}, coll: coll} }

func (s *valueSet) key(v bsoncore.Value) string {
	if s.coll == nil {
		return string(keystring.Append(nil, v))
	}
	return string(keystring.AppendCollated(nil, v, s.coll))
}

func (s *valueSet) add(v bsoncore.Value) {
	k := s.key(v)
	if !s.keys[k] {
		s.keys[k] = true
		s.order = append(s.order, v)
	}
}

func (s *valueSet) has(v bsoncore.Value) bool { return s.keys[s.key(v)] }

func setOf(arr bsoncore.Value, coll Collator) *valueSet {
	s := newValueSet(coll)
	it := elemsOf(arr)
	for {
		_, v, ok := it.next()
		if !ok {
			return s
		}
		s.add(v)
	}
}

func evalSetUnion(coll Collator, _ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	s := newValueSet(coll)
	for _, v := range vals {
		if IsNullish(v) {
			return Null, nil
		}
		if v.Type != bsoncore.TypeArray {
			return Missing, errorf(codeSetUnionType, "All operands of $setUnion must be arrays. One argument is of type: %s", TypeName(v))
		}
		for _, e := range arrayValues(v) {
			s.add(e)
		}
	}
	return Array(s.sorted()), nil
}

// sorted is the set's elements in ascending order.
func (s *valueSet) sorted() []bsoncore.Value {
	slices.SortStableFunc(s.order, func(a, b bsoncore.Value) int { return CompareWith(a, b, s.coll) })
	return s.order
}

func evalSetIntersection(coll Collator, _ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	var cur *valueSet
	for _, v := range vals {
		if IsNullish(v) {
			return Null, nil
		}
		if v.Type != bsoncore.TypeArray {
			return Missing, errorf(codeIntersectionType, "All operands of $setIntersection must be arrays. One argument is of type: %s", TypeName(v))
		}
		next := setOf(v, coll)
		if cur == nil {
			cur = next
			continue
		}
		kept := newValueSet(coll)
		for _, e := range cur.order {
			if next.has(e) {
				kept.add(e)
			}
		}
		cur = kept
	}
	if cur == nil {
		return Array(nil), nil
	}
	return Array(cur.sorted()), nil
}

func evalSetDifference(coll Collator, _ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	a, b := vals[0], vals[1]
	if IsNullish(a) || IsNullish(b) {
		return Null, nil
	}
	if a.Type != bsoncore.TypeArray {
		return Missing, errorf(codeDifferenceFirstTy, "both operands of $setDifference must be arrays. First argument is of type: %s", TypeName(a))
	}
	if b.Type != bsoncore.TypeArray {
		return Missing, errorf(codeDifferenceSecondTy, "both operands of $setDifference must be arrays. Second argument is of type: %s", TypeName(b))
	}
	exclude := setOf(b, coll)
	out := newValueSet(coll)
	for _, e := range arrayValues(a) {
		if !exclude.has(e) {
			out.add(e)
		}
	}
	return Array(out.order), nil
}

func parseSetEquals(arg bsoncore.Value, s *Scope) (Expr, error) {
	args, err := parseArgs(arg, s)
	if err != nil {
		return nil, err
	}
	if len(args) < 2 {
		return nil, errorf(codeSetEqualsArgs, "$setEquals needs at least two arguments had: %d", len(args))
	}
	return naryExpr{op: "$setEquals", args: args, evalColl: evalSetEquals}, nil
}

func evalSetEquals(coll Collator, _ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	var first *valueSet
	for i, v := range vals {
		if v.Type != bsoncore.TypeArray {
			return Missing, errorf(codeSetEqualsType, "All operands of $setEquals must be arrays. %d-th argument is of type: %s", i+1, TypeName(v))
		}
		s := setOf(v, coll)
		if first == nil {
			first = s
			continue
		}
		if len(s.keys) != len(first.keys) {
			return Bool(false), nil
		}
		for k := range s.keys {
			if !first.keys[k] {
				return Bool(false), nil
			}
		}
	}
	return Bool(true), nil
}

func evalSetIsSubset(coll Collator, _ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	a, b := vals[0], vals[1]
	if a.Type != bsoncore.TypeArray {
		return Missing, errorf(codeSubsetFirstType, "both operands of $setIsSubset must be arrays. First argument is of type: %s", TypeName(a))
	}
	if b.Type != bsoncore.TypeArray {
		return Missing, errorf(codeSubsetSecondType, "both operands of $setIsSubset must be arrays. Second argument is of type: %s", TypeName(b))
	}
	super := setOf(b, coll)
	for _, e := range arrayValues(a) {
		if !super.has(e) {
			return Bool(false), nil
		}
	}
	return Bool(true), nil
}

// evalElementsTrue is $anyElementTrue (wantAny) and $allElementsTrue.
func evalElementsTrue(wantAny bool) func(string, []bsoncore.Value) (bsoncore.Value, error) {
	return func(op string, vals []bsoncore.Value) (bsoncore.Value, error) {
		arr := vals[0]
		if arr.Type != bsoncore.TypeArray {
			code := codeAllElementsType
			if wantAny {
				code = codeAnyElementType
			}
			return Missing, errorf(code, "%s's argument must be an array, but is %s", op, TypeName(arr))
		}
		for _, e := range arrayValues(arr) {
			if Truthy(e) == wantAny {
				return Bool(wantAny), nil
			}
		}
		return Bool(!wantAny), nil
	}
}
