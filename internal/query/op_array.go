package query

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Array operators: $all, $elemMatch and $size. $elemMatch and $size look at
// a leaf array as a whole and never match a scalar.

// sizePred is $size: an array with exactly n elements.
type sizePred struct{ n int64 }

func (sizePred) wholeArray() {}

func parseSize(v bsoncore.Value) (pred, error) {
	var n int64
	switch v.Type {
	case bsoncore.TypeInt32:
		i, _ := v.Int32OK()
		n = int64(i)
	case bsoncore.TypeInt64:
		i, _ := v.Int64OK()
		if i < math.MinInt32 || i > math.MaxInt32 {
			return nil, badValue("$size must be representable as a 32-bit integer")
		}
		n = i
	case bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		i, ok := integerValue(v)
		if !ok || i < math.MinInt32 || i > math.MaxInt32 {
			return nil, badValue("$size must be a whole number")
		}
		n = i
	default:
		return nil, badValue("$size needs a number")
	}
	if n < 0 {
		return nil, badValue("$size may not be negative")
	}
	return sizePred{n}, nil
}

func (p sizePred) matchValue(v bsoncore.Value, _ *state) bool {
	if v.Type != bsoncore.TypeArray {
		return false
	}
	var n int64
	it := elemsOf(v)
	for {
		if _, _, ok := it.next(); !ok {
			return n == p.n
		}
		n++
	}
}

// elemMatchObjPred is $elemMatch's object form: some element, a document
// (or an array, seen as a document with keys "0", "1", …), satisfies a
// filter.
type elemMatchObjPred struct{ m matcher }

func (elemMatchObjPred) wholeArray() {}

func (p elemMatchObjPred) matchValue(v bsoncore.Value, st *state) bool {
	if v.Type != bsoncore.TypeArray {
		return false
	}
	pos := st.pos
	it := elemsOf(v)
	for k := 0; ; k++ {
		_, e, ok := it.next()
		if !ok {
			st.pos = pos
			return false
		}
		if e.Type != bsoncore.TypeEmbeddedDocument && e.Type != bsoncore.TypeArray {
			continue
		}
		if p.m.match(e.Data, st) {
			st.pos = k
			return true
		}
	}
}

// elemMatchValuePred is $elemMatch's value form ({$elemMatch: {$gt: 1,
// $lt: 5}}): some element satisfies every operator.
type elemMatchValuePred struct{ p pred }

func (elemMatchValuePred) wholeArray() {}

func (p elemMatchValuePred) matchValue(v bsoncore.Value, st *state) bool {
	if v.Type != bsoncore.TypeArray {
		return false
	}
	pos := st.pos
	it := elemsOf(v)
	for k := 0; ; k++ {
		_, e, ok := it.next()
		if !ok {
			st.pos = pos
			return false
		}
		if p.p.matchValue(e, st) {
			st.pos = k
			return true
		}
	}
}

func parseElemMatch(v bsoncore.Value) (pred, error) {
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return nil, badValue("$elemMatch needs an Object")
	}
	if isOperatorDoc(v, true) {
		it := elemsOf(v)
		first, _, _ := it.next()
		if !pathlessOperators[string(first)] {
			p, err := parseOperators("", v)
			if err != nil {
				return nil, err
			}
			return elemMatchValuePred{p}, nil
		}
	}
	if hasField(v, "$where") {
		return nil, badValue("$elemMatch cannot contain $where expression")
	}
	m, err := parseDoc(v.Data, levelSubDoc)
	if err != nil {
		return nil, err
	}
	return elemMatchObjPred{m}, nil
}

// parseAll parses $all: an AND of equalities (regexes match), or of
// $elemMatch predicates when the first element is one. An empty $all
// matches nothing.
func parseAll(name string, v bsoncore.Value) (pred, error) {
	if v.Type != bsoncore.TypeArray {
		return nil, badValue("$all needs an array")
	}
	vals := arrayValues(v)
	if len(vals) == 0 {
		return constPred(false), nil
	}
	var and andPred
	if firstFieldIs(vals[0], "$elemMatch") {
		for _, e := range vals {
			if !firstFieldIs(e, "$elemMatch") {
				return nil, badValue("$all/$elemMatch has to be consistent")
			}
			p, err := parseElemMatch(lookup(e.Data, "$elemMatch"))
			if err != nil {
				return nil, err
			}
			and = append(and, p)
		}
		return and, nil
	}
	for _, e := range vals {
		switch {
		case e.Type == bsoncore.TypeRegex:
			re, err := regexFromValue(e)
			if err != nil {
				return nil, err
			}
			and = append(and, re)
		case e.Type == bsoncore.TypeEmbeddedDocument && knownFieldOperators[firstField(e)]:
			return nil, badValue("no $ expressions in $all")
		default:
			and = append(and, newCmp(opEQ, e))
		}
	}
	return and, nil
}

func firstField(v bsoncore.Value) string {
	it := elemsOf(v)
	k, _, _ := it.next()
	return string(k)
}

func firstFieldIs(v bsoncore.Value, name string) bool {
	return v.Type == bsoncore.TypeEmbeddedDocument && firstField(v) == name
}

func arrayValues(v bsoncore.Value) []bsoncore.Value {
	var out []bsoncore.Value
	it := elemsOf(v)
	for {
		_, e, ok := it.next()
		if !ok {
			return out
		}
		out = append(out, e)
	}
}
