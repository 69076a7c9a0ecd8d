package planner

import (
	"encoding/binary"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/collation"
	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/query"
)

// cond is one condition of a filter on one path: an operator and its
// operand ($eq for a plain value), read from the filter's tree.
type cond struct {
	op   string
	v    bsoncore.Value
	list []bsoncore.Value // the values of $in and $nin
}

// analysis is what the planner reads of a filter: the conditions that all
// must hold, per path (top level and through $and), and the branches of a
// top-level $or.
type analysis struct {
	coll  *collation.Collator // the query's collation (Query.Collation)
	conds map[string][]cond
	ors   [][]query.Conjunction // each top-level $or's branches
}

func analyze(c query.Conjunction) *analysis {
	a := &analysis{conds: map[string][]cond{}}
	a.collect(c)
	return a
}

// collect reads the conditions of one conjunction (query's Conjuncts:
// per path, through $and). Paths with a numeric component are left out
// (see hasNumericPart), and so are $nor and the opaque clauses ($expr,
// $jsonSchema, …): they bound nothing.
func (a *analysis) collect(c query.Conjunction) {
	paths, ors := c.Conjuncts()
	for _, or := range ors {
		a.ors = append(a.ors, or.Branches)
	}
	for _, pc := range paths {
		if hasNumericPart(pc.Path) {
			continue
		}
		for _, op := range pc.Ops {
			name := op.Name
			if op.Implicit {
				// A plain value is an equality; a plain regex is too, to
				// the planner: it bounds nothing as either.
				name = "$eq"
			}
			a.conds[pc.Path] = append(a.conds[pc.Path], cond{op: name, v: op.Value, list: op.List})
		}
	}
}

// hasNumericPart reports a path component that could be an array index,
// which index keys do not follow the same way.
//
// A part is numeric when it is digits with an optional sign (what
// strconv.Atoi reads, at any length: counting more parts numeric only
// leaves more to FETCH). It runs per filtered path on every planned read,
// so it neither splits nor allocates.
func hasNumericPart(path string) bool {
	for part := range strings.SplitSeq(path, ".") {
		if part != "" && (part[0] == '+' || part[0] == '-') {
			part = part[1:]
		}
		if part != "" && strings.Trim(part, "0123456789") == "" {
			return true
		}
	}
	return false
}

// condOIL is the bounds one condition puts on a field; ok is false when the
// condition does not bound index keys simply (the field stays unbounded).
func condOIL(c cond) (OIL, bool) {
	switch c.op {
	case "$eq":
		return equalityOIL(c.v)
	case "$in":
		var pts []bsoncore.Value
		for _, x := range c.list {
			o, ok := equalityOIL(x)
			if !ok {
				return nil, false
			}
			for _, iv := range o {
				pts = append(pts, iv.Lo)
			}
		}
		return pointsOIL(pts), true
	case "$gt", "$gte", "$lt", "$lte":
		return rangeOIL(c.op, c.v)
	}
	return nil, false
}

// equalityOIL bounds {f: v}. A null also matches undefined (and missing
// fields, whose key is null); arrays, regexes and undefined are not one
// key.
func equalityOIL(v bsoncore.Value) (OIL, bool) {
	switch v.Type {
	case bsoncore.TypeArray, bsoncore.TypeRegex, bsoncore.TypeUndefined:
		return nil, false
	case bsoncore.TypeNull:
		return OIL{point(bsoncore.Value{Type: bsoncore.TypeUndefined}), point(v)}, true
	}
	return OIL{point(v)}, true
}

// condRank orders conditions for a multikey field, where only one may
// bound the scan: equality, then $in, then a range.
func condRank(op string) int {
	switch op {
	case "$eq":
		return 0
	case "$in":
		return 1
	}
	return 2
}

// fieldOIL is the bounds the conditions on one path put on an index field.
// On a path that may hold arrays, conditions are never intersected
// ({a: {$gt: 5, $lt: 8}} matches {a: [1, 10]} through two elements): the
// best single condition bounds the field ("Bounds are a superset").
func fieldOIL(conds []cond, multikey bool) OIL {
	var out OIL
	best := -1
	for _, c := range conds {
		o, ok := condOIL(c)
		if !ok {
			continue
		}
		if !multikey {
			out = out.intersect(o)
			if out == nil {
				out = o
			}
			continue
		}
		if r := condRank(c.op); best < 0 || r < best {
			out, best = o, r
		}
	}
	return out
}

// hashedOIL is the bounds the conditions on one path put on a hashed index
// field: the hashes of the values an equality or $in names, as points
// (NumberLongs, which explain prints). Ranges cannot use a hashed field:
// hashes do not keep the values' order. Values that compare equal hash
// alike (2, 2.0, NumberLong(2)), so every match is within the points; other
// values may share a hash (2.5 hashes as 2), so FETCH applies the filter
// again. Hashed fields hold no arrays (index.Spec.Keys refuses them), so
// the conditions are intersected.
func hashedOIL(conds []cond) OIL {
	var eqs []cond
	for _, c := range conds {
		if c.op == "$eq" || c.op == "$in" {
			eqs = append(eqs, c)
		}
	}
	o := fieldOIL(eqs, false)
	if o == nil || !o.allPoints() && len(o) > 0 {
		return nil
	}
	hashes := make([]bsoncore.Value, len(o))
	for i, iv := range o {
		hashes[i] = hashValue(iv.Lo)
	}
	return pointsOIL(hashes)
}

// hashValue is v's key in a hashed index field.
func hashValue(v bsoncore.Value) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt64, Data: binary.LittleEndian.AppendUint64(nil, uint64(index.Hash(v)))}
}

// The hashed keys of null (a missing field) and undefined.
var (
	hashedNull      = hashValue(bsoncore.Value{Type: bsoncore.TypeNull})
	hashedUndefined = hashValue(bsoncore.Value{Type: bsoncore.TypeUndefined})
)

// wildcardOIL is the bounds the conditions on one path put on the value
// part of a wildcard index's keys. Wildcard indexes key the leaves under
// a document or array, not the document or array itself, and hold nothing
// for a missing field: an equality to a non-empty document cannot use
// them (the condition is left to FETCH), and bounds that admit null or
// undefined, or none at all, mean the index cannot serve the path (nil).
func wildcardOIL(conds []cond, multikey bool) OIL {
	var usable []cond
	for _, c := range conds {
		if (c.op == "$eq" || c.op == "$in") && namesDocument(c) {
			continue
		}
		usable = append(usable, c)
	}
	o := fieldOIL(usable, multikey)
	if o.IsFull() || o.hasNull() {
		return nil
	}
	return o
}

// namesDocument reports an equality operand (or an $in list holding one)
// that is a non-empty document.
func namesDocument(c cond) bool {
	isDoc := func(x bsoncore.Value) bool {
		d, ok := x.DocumentOK()
		return ok && len(d) > 5
	}
	if c.op == "$in" {
		return slices.ContainsFunc(c.list, isDoc)
	}
	return isDoc(c.v)
}
