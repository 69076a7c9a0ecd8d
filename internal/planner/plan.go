package planner

import (
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/keystring"
)

// Plan is how to read a collection for one filter.
type Plan struct {
	// Index names the index to scan; "" means a collection scan.
	Index string
	// Lower and Upper bound the encoded keys to read (both inclusive, as
	// key prefixes; nil means unbounded).
	Lower, Upper []byte
}

// IsCollScan reports whether the plan reads the whole collection.
func (p Plan) IsCollScan() bool { return p.Index == "" }

// predicate kinds, in order of preference.
const (
	kindEq = iota
	kindIn
	kindRange
	kindNone
)

// pred is what the planner can use of a filter's conditions on one field.
type pred struct {
	kind   int
	lo, hi bsoncore.Value // Type 0: unbounded
}

// Choose picks a plan for filter over a collection with these indexes
// (names and parsed specs in the same order).
func Choose(filter bsoncore.Document, names []string, specs []*index.Spec) Plan {
	preds := fieldPredicates(filter)
	if len(preds) == 0 {
		return Plan{}
	}
	best, bestRank := -1, kindNone*2+1
	var bestPred pred
	for i, s := range specs {
		if !usable(s) {
			continue
		}
		p, ok := preds[s.KeyPattern[0].Path]
		if !ok || p.kind == kindNone {
			continue
		}
		rank := p.kind * 2
		if !(p.kind == kindEq && s.Unique) {
			rank++
		}
		if rank < bestRank {
			best, bestRank, bestPred = i, rank, p
		}
	}
	if best < 0 {
		return Plan{}
	}
	return boundsFor(names[best], specs[best], bestPred)
}

// ForIndex is the plan that reads the named index: with bounds when filter
// constrains its first field, the whole index otherwise (a hint).
func ForIndex(filter bsoncore.Document, name string, spec *index.Spec) Plan {
	if p, ok := fieldPredicates(filter)[spec.KeyPattern[0].Path]; ok && p.kind != kindNone && usableBounds(spec) {
		return boundsFor(name, spec, p)
	}
	return Plan{Index: name}
}

// usable reports whether the planner may choose s on its own.
func usable(s *index.Spec) bool {
	return !s.Hidden && !s.Sparse && s.PartialFilterExpression == nil && usableBounds(s)
}

// usableBounds reports whether keys of s can be bounded by value: an
// ordinary ascending/descending first field.
func usableBounds(s *index.Spec) bool {
	if s.IsHashed() || s.IsWildcard() || len(s.KeyPattern) == 0 {
		return false
	}
	k := s.KeyPattern[0].Kind
	return k == index.Ascending || k == index.Descending
}

// boundsFor encodes a predicate's value bounds in the key space of spec's
// first field (reversed for a descending field).
func boundsFor(name string, spec *index.Spec, p pred) Plan {
	enc := keystring.Append
	desc := spec.KeyPattern[0].Kind == index.Descending
	if desc {
		enc = keystring.AppendDesc
	}
	var lo, hi []byte
	if p.lo.Type != 0 {
		lo = enc(nil, p.lo)
	}
	if p.hi.Type != 0 {
		hi = enc(nil, p.hi)
	}
	if desc {
		lo, hi = hi, lo
	}
	return Plan{Index: name, Lower: lo, Upper: hi}
}

// fieldPredicates collects, per top-level field path (through top-level
// $and), the best predicate the planner can use.
func fieldPredicates(filter bsoncore.Document) map[string]pred {
	out := map[string]pred{}
	collect(filter, out)
	return out
}

func collect(filter bsoncore.Document, out map[string]pred) {
	elems, err := filter.Elements()
	if err != nil {
		return
	}
	for _, el := range elems {
		key := el.Key()
		if key == "$and" {
			if arr, ok := el.Value().ArrayOK(); ok {
				vals, _ := arr.Values()
				for _, v := range vals {
					if d, ok := v.DocumentOK(); ok {
						collect(d, out)
					}
				}
			}
			continue
		}
		if strings.HasPrefix(key, "$") || hasNumericPart(key) {
			continue
		}
		p := predicateOf(el.Value())
		if cur, ok := out[key]; !ok || p.kind < cur.kind {
			out[key] = p
		}
	}
}

// hasNumericPart reports a path component that could be an array index,
// which index keys do not follow the same way.
func hasNumericPart(path string) bool {
	for _, part := range strings.Split(path, ".") {
		if _, err := strconv.Atoi(part); err == nil {
			return true
		}
	}
	return false
}

// predicateOf reads the usable condition of one field's filter value.
func predicateOf(v bsoncore.Value) pred {
	if isOperatorDoc(v) {
		return operatorPredicate(v.Document())
	}
	return equality(v)
}

func equality(v bsoncore.Value) pred {
	switch v.Type {
	case bsoncore.TypeArray, bsoncore.TypeRegex, bsoncore.TypeUndefined:
		// Whole-array and pattern matches are not one key, and an equality
		// to undefined matches missing fields as the query engine reads it.
		return pred{kind: kindNone}
	case bsoncore.TypeNull:
		// {a: null} also matches undefined (and missing, indexed as null).
		return pred{kind: kindEq, lo: bsoncore.Value{Type: bsoncore.TypeUndefined}, hi: v}
	}
	return pred{kind: kindEq, lo: v, hi: v}
}

func operatorPredicate(ops bsoncore.Document) pred {
	best := pred{kind: kindNone}
	elems, _ := ops.Elements()
	for _, el := range elems {
		var p pred
		switch el.Key() {
		case "$eq":
			p = equality(el.Value())
		case "$in":
			p = inPredicate(el.Value())
		case "$gt", "$gte":
			if rangeable(el.Value()) {
				p = pred{kind: kindRange, lo: el.Value()}
			} else {
				continue
			}
		case "$lt", "$lte":
			if rangeable(el.Value()) {
				p = pred{kind: kindRange, hi: el.Value()}
			} else {
				continue
			}
		default:
			continue
		}
		// One condition only: bounds of two conditions are never intersected.
		if p.kind < best.kind {
			best = p
		}
	}
	return best
}

// inPredicate bounds $in by its smallest and largest value.
func inPredicate(v bsoncore.Value) pred {
	arr, ok := v.ArrayOK()
	if !ok {
		return pred{kind: kindNone}
	}
	vals, err := arr.Values()
	if err != nil || len(vals) == 0 {
		return pred{kind: kindNone}
	}
	var lo, hi bsoncore.Value
	for i, x := range vals {
		p := equality(x)
		if p.kind != kindEq {
			return pred{kind: kindNone}
		}
		if i == 0 || bsonx.Compare(p.lo, lo) < 0 {
			lo = p.lo
		}
		if i == 0 || bsonx.Compare(p.hi, hi) > 0 {
			hi = p.hi
		}
	}
	return pred{kind: kindIn, lo: lo, hi: hi}
}

// rangeable reports whether a range operand bounds keys simply.
func rangeable(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeArray, bsoncore.TypeRegex, bsoncore.TypeEmbeddedDocument, bsoncore.TypeNull,
		bsoncore.TypeMinKey, bsoncore.TypeMaxKey, bsoncore.TypeUndefined:
		return false
	}
	return true
}

func isOperatorDoc(v bsoncore.Value) bool {
	d, ok := v.DocumentOK()
	if !ok {
		return false
	}
	el, err := d.IndexErr(0)
	return err == nil && strings.HasPrefix(el.Key(), "$")
}
