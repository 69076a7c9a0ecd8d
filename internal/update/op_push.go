package update

import (
	"math"
	"math/big"
	"slices"
	"strings"

	"github.com/cairndb/cairn/internal/bsonx"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// $push: append a value, or with $each several, to an array (created if
// missing), then optionally $sort the whole array and keep a $slice of it;
// $position says where the new values go.

func init() { register("$push", parsePush) }

type pushNode struct {
	values   []bsoncore.Value
	position int64 // where to insert; math.MaxInt64 appends
	hasSlice bool
	slice    int64
	sort     *pushSort
}

// pushSort is $push's $sort: the whole elements (by 1 or -1) or fields of
// them ({score: -1, name: 1}).
type pushSort struct {
	whole  bool
	dir    int
	fields []sortField
}

type sortField struct {
	path path
	dir  int
}

func parsePush(_ path, arg bsoncore.Value) (updNode, error) {
	n := &pushNode{position: math.MaxInt64}
	if arg.Type != bsoncore.TypeEmbeddedDocument || !hasField(arg.Data, "$each") {
		n.values = []bsoncore.Value{arg}
		return n, nil
	}
	clauses := map[string]bsoncore.Value{}
	elems := arg.Data[4 : len(arg.Data)-1]
	for len(elems) > 0 {
		t, key, val, rest, ok := bsonx.NextElement(elems)
		if !ok {
			break
		}
		elems = rest
		k := string(key)
		switch k {
		case "$each", "$slice", "$sort", "$position":
		default:
			return nil, badValue("Unrecognized clause in $push: %s", k)
		}
		if _, dup := clauses[k]; dup {
			return nil, badValue("Only one %s is supported.", k)
		}
		clauses[k] = bsoncore.Value{Type: t, Data: val}
	}
	each := clauses["$each"]
	if each.Type != bsoncore.TypeArray {
		return nil, badValue("The argument to $each in $push must be an array but it was of type: %s", typeName(each.Type))
	}
	n.values = arrayValues(each)
	if v, ok := clauses["$slice"]; ok {
		i, err := integerArg(v)
		if err != nil {
			return nil, badValue("The value for $slice must be an integer value but was given type: %s", typeName(v.Type))
		}
		n.hasSlice, n.slice = true, i
	}
	if v, ok := clauses["$sort"]; ok {
		srt, err := parsePushSort(v)
		if err != nil {
			return nil, err
		}
		n.sort = srt
	}
	if v, ok := clauses["$position"]; ok {
		i, err := integerArg(v)
		if err != nil {
			return nil, badValue("The value for $position must be an integer value, not of type: %s", typeName(v.Type))
		}
		n.position = i
	}
	return n, nil
}

func parsePushSort(v bsoncore.Value) (*pushSort, error) {
	dirOf := func(v bsoncore.Value) int {
		if isNumber(v.Type) {
			switch f := numberAsFloat(v); f {
			case 1:
				return 1
			case -1:
				return -1
			}
		}
		return 0
	}
	switch {
	case v.Type == bsoncore.TypeEmbeddedDocument:
		s := &pushSort{}
		elems := v.Data[4 : len(v.Data)-1]
		if len(elems) == 0 {
			return nil, badValue("The $sort pattern is empty when it should be a set of fields.")
		}
		for len(elems) > 0 {
			t, key, val, rest, ok := bsonx.NextElement(elems)
			if !ok {
				break
			}
			elems = rest
			dir := dirOf(bsoncore.Value{Type: t, Data: val})
			if dir == 0 {
				return nil, badValue("The $sort element value must be either 1 or -1")
			}
			k := string(key)
			if k == "" {
				return nil, badValue("The $sort field cannot be empty")
			}
			p := path(strings.Split(k, "."))
			if slices.Contains(p, "") {
				return nil, badValue("The $sort field is a dotted field but has an empty part: %s", k)
			}
			s.fields = append(s.fields, sortField{path: p, dir: dir})
		}
		return s, nil
	case isNumber(v.Type):
		dir := dirOf(v)
		if dir == 0 {
			return nil, badValue("The $sort element value must be either 1 or -1")
		}
		return &pushSort{whole: true, dir: dir}, nil
	}
	return nil, badValue("The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort embedded fields")
}

func (n *pushNode) apply(s *applyState, c cursor) error {
	if !c.complete() {
		arr := emptyArrayNode()
		n.push(arr)
		return s.create(c, arr)
	}
	if !c.elem.isArray() {
		return badValue("The field '%s' must be an array but is of type %s in document {%s}", joinPath(c.taken), typeName(c.elem.t), s.idString())
	}
	for _, v := range n.values {
		if err := checkDepth(len(c.taken)+1, v); err != nil {
			return err
		}
	}
	// Appending to an array nobody opened rewrites its bytes in one go.
	if !c.elem.open && n.sort == nil && !n.hasSlice && len(n.values) > 0 {
		if size, ok := c.elem.arrayLen(); ok && n.position >= int64(size) {
			c.elem.appendClosed(size, n.values)
			return s.replaced(c)
		}
	}
	if err := c.elem.expand(); err != nil {
		return err
	}
	if !n.push(c.elem) {
		return nil
	}
	return s.replaced(c)
}

// push changes the open array arr and reports whether MongoDB counts that
// as a change: something was inserted, sorted or sliced off.
func (n *pushNode) push(arr *node) bool {
	changed := len(n.values) > 0
	if changed {
		ins := make([]kid, len(n.values))
		for i, v := range n.values {
			ins[i] = kid{n: newNode(v)}
		}
		size := int64(len(arr.kids))
		var at int64
		switch p := n.position; {
		case size == 0 || p > size:
			at = size
		case p > 0:
			at = p
		case p < 0 && -p < size:
			at = size + p
		default:
			at = 0
		}
		arr.kids = slices.Insert(arr.kids, int(at), ins...)
	}
	if n.sort != nil {
		changed = true
		vals := make([]bsoncore.Value, len(arr.kids))
		for i, k := range arr.kids {
			vals[i] = k.n.value()
		}
		idx := make([]int, len(arr.kids))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int { return n.sort.compare(vals[a], vals[b]) })
		sorted := make([]kid, len(idx))
		for i, j := range idx {
			sorted[i] = arr.kids[j]
		}
		arr.kids = sorted
	}
	if n.hasSlice {
		limit := n.slice
		if limit < 0 {
			limit = -limit
		}
		if limit < 0 { // -MinInt64
			limit = math.MaxInt64
		}
		if int64(len(arr.kids)) > limit {
			changed = true
			if n.slice >= 0 {
				arr.kids = arr.kids[:limit]
			} else {
				arr.kids = arr.kids[int64(len(arr.kids))-limit:]
			}
		}
	}
	return changed
}

// compare orders two array elements for $sort: whole values in MongoDB's
// order, or the pattern's fields of each element (a missing field, or an
// element that is not a document, counts as null), field by field.
func (ps *pushSort) compare(a, b bsoncore.Value) int {
	if ps.whole {
		return ps.dir * bsonx.Compare(a, b)
	}
	for _, f := range ps.fields {
		if c := f.dir * bsonx.Compare(sortKey(a, f.path), sortKey(b, f.path)); c != 0 {
			return c
		}
	}
	return 0
}

var nullValue = bsoncore.Value{Type: bsoncore.TypeNull}

// sortKey extracts a dotted field as MongoDB's getFieldDotted does: through
// documents by name and arrays by index, without implicit traversal.
func sortKey(v bsoncore.Value, p path) bsoncore.Value {
	for _, part := range p {
		if v.Type != bsoncore.TypeEmbeddedDocument && v.Type != bsoncore.TypeArray {
			return nullValue
		}
		next, ok := lookupRaw(v.Data, part)
		if !ok {
			return nullValue
		}
		v = next
	}
	return v
}

// lookupRaw finds the first element named name in a framed document or
// array.
func lookupRaw(doc []byte, name string) (bsoncore.Value, bool) {
	if len(doc) < 5 {
		return bsoncore.Value{}, false
	}
	elems := doc[4 : len(doc)-1]
	for len(elems) > 0 {
		t, key, val, rest, ok := bsonx.NextElement(elems)
		if !ok {
			break
		}
		if string(key) == name {
			return bsoncore.Value{Type: t, Data: val}, true
		}
		elems = rest
	}
	return bsoncore.Value{}, false
}

func hasField(doc []byte, name string) bool {
	_, ok := lookupRaw(doc, name)
	return ok
}

// arrayValues lists the elements of an array value.
func arrayValues(v bsoncore.Value) []bsoncore.Value {
	var out []bsoncore.Value
	if len(v.Data) < 5 {
		return nil
	}
	elems := v.Data[4 : len(v.Data)-1]
	for len(elems) > 0 {
		t, _, val, rest, ok := bsonx.NextElement(elems)
		if !ok {
			break
		}
		out = append(out, bsoncore.Value{Type: t, Data: val})
		elems = rest
	}
	return out
}

func numberAsFloat(v bsoncore.Value) float64 {
	if v.Type == bsoncore.TypeDecimal128 {
		h, l := v.Decimal128()
		f, err := bson.ParseDecimal128(bson.NewDecimal128(h, l).String())
		if err != nil {
			return math.NaN()
		}
		bi, exp, err := f.BigInt()
		if err != nil {
			return math.NaN()
		}
		r, _ := new(big.Float).SetInt(bi).Float64()
		return r * math.Pow10(exp)
	}
	return toFloat(v)
}

// integerArg reads a number that must hold an integer, as MongoDB's
// parseIntegerElementToLong: int32, int64, or a double or decimal with an
// integral value within int64.
func integerArg(v bsoncore.Value) (int64, error) {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		return toInt(v), nil
	case bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		f := numberAsFloat(v)
		if math.IsNaN(f) {
			return 0, failedToParse("Expected an integer, but found NaN in: %s", v.String())
		}
		if f >= math.MaxInt64 || f < math.MinInt64 {
			return 0, failedToParse("Cannot represent as a 64-bit integer: %s", v.String())
		}
		if f != math.Trunc(f) {
			return 0, failedToParse("Expected an integer: %s", v.String())
		}
		return int64(f), nil
	}
	return 0, failedToParse("Expected a number in: %s", v.String())
}
