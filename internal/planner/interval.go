package planner

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
)

// Interval is a range of values of one index field, in MongoDB's order,
// with each end included or not.
type Interval struct {
	Lo, Hi         bsoncore.Value
	LoIncl, HiIncl bool
}

// OIL (ordered interval list) is the bounds of one index field: disjoint
// intervals in increasing order. Nil means no constraint ([MinKey, MaxKey]);
// an empty non-nil list admits nothing.
type OIL []Interval

var (
	minKey = bsoncore.Value{Type: bsoncore.TypeMinKey}
	maxKey = bsoncore.Value{Type: bsoncore.TypeMaxKey}
	// fullInterval is every value, [MinKey, MaxKey].
	fullInterval = Interval{Lo: minKey, Hi: maxKey, LoIncl: true, HiIncl: true}
)

// point is the interval [v, v].
func point(v bsoncore.Value) Interval { return Interval{Lo: v, Hi: v, LoIncl: true, HiIncl: true} }

// IsPoint reports whether the interval holds one value.
func (iv Interval) IsPoint() bool {
	return iv.LoIncl && iv.HiIncl && bsonx.Compare(iv.Lo, iv.Hi) == 0
}

// isFull reports whether the interval is [MinKey, MaxKey].
func (iv Interval) isFull() bool {
	return iv.LoIncl && iv.HiIncl && iv.Lo.Type == bsoncore.TypeMinKey && iv.Hi.Type == bsoncore.TypeMaxKey
}

// contains reports whether v lies in the interval.
func (iv Interval) contains(v bsoncore.Value) bool {
	c := bsonx.Compare(v, iv.Lo)
	if c < 0 || c == 0 && !iv.LoIncl {
		return false
	}
	c = bsonx.Compare(v, iv.Hi)
	return c < 0 || c == 0 && iv.HiIncl
}

// IsFull reports whether the list does not constrain its field.
func (o OIL) IsFull() bool { return o == nil || len(o) == 1 && o[0].isFull() }

// allPoints reports whether every interval holds one value.
func (o OIL) allPoints() bool {
	if o.IsFull() {
		return false
	}
	for _, iv := range o {
		if !iv.IsPoint() {
			return false
		}
	}
	return true
}

// intervals returns the list with the full interval made explicit.
func (o OIL) intervals() []Interval {
	if o == nil {
		return []Interval{fullInterval}
	}
	return o
}

// contains reports whether v lies in one of the intervals.
func (o OIL) contains(v bsoncore.Value) bool {
	for _, iv := range o.intervals() {
		if iv.contains(v) {
			return true
		}
	}
	return false
}

// ordered reports whether the intervals are disjoint and increasing, as
// the type promises; a scan checks it once before containsOrdered searches
// them, so a list built otherwise is still tested correctly, one by one.
func (o OIL) ordered() bool {
	for i := 1; i < len(o); i++ {
		c := bsonx.Compare(o[i-1].Hi, o[i].Lo)
		if c > 0 || c == 0 && o[i-1].HiIncl && o[i].LoIncl {
			return false
		}
	}
	return true
}

// containsOrdered is contains for an ordered list, by binary search: the
// only interval that can hold v is the first whose upper end is not below
// it. A scan that checks each key against a long $in (one of more than
// maxRanges values scans the whole index) costs keys × log(values), not
// keys × values: a catch-up's {_id: {$in: 5,000 ids}} over 100,000 keys
// took minutes with the linear test (session 16's mk19, branch wt16/mk19).
func (o OIL) containsOrdered(v bsoncore.Value) bool {
	i := o.search(v)
	return i < len(o) && o[i].contains(v)
}

// search is, in an ordered list, the first interval whose upper end is not
// below v: the only one that can hold v; the intervals before it lie
// wholly below v, and those from it on (when it does not hold v) wholly
// above.
func (o OIL) search(v bsoncore.Value) int {
	return sort.Search(len(o), func(i int) bool {
		c := bsonx.Compare(v, o[i].Hi)
		return c < 0 || c == 0 && o[i].HiIncl
	})
}

// hasNull reports whether the bounds admit null or undefined keys: the keys
// of documents missing the field, which a sparse index does not hold.
func (o OIL) hasNull() bool {
	return o.contains(bsoncore.Value{Type: bsoncore.TypeNull}) || o.contains(bsoncore.Value{Type: bsoncore.TypeUndefined})
}

// intersect returns the values in both lists.
func (o OIL) intersect(p OIL) OIL {
	if o.IsFull() {
		return p
	}
	if p.IsFull() {
		return o
	}
	out := OIL{}
	for _, a := range o {
		for _, b := range p {
			if iv, ok := intersectIntervals(a, b); ok {
				out = append(out, iv)
			}
		}
	}
	return out
}

func intersectIntervals(a, b Interval) (Interval, bool) {
	out := a
	if c := bsonx.Compare(b.Lo, a.Lo); c > 0 || c == 0 && !b.LoIncl {
		out.Lo, out.LoIncl = b.Lo, b.LoIncl
	}
	if c := bsonx.Compare(b.Hi, a.Hi); c < 0 || c == 0 && !b.HiIncl {
		out.Hi, out.HiIncl = b.Hi, b.HiIncl
	}
	c := bsonx.Compare(out.Lo, out.Hi)
	if c > 0 || c == 0 && !(out.LoIncl && out.HiIncl) {
		return Interval{}, false
	}
	return out, true
}

// pointsOIL makes the list of distinct points among vals, sorted.
func pointsOIL(vals []bsoncore.Value) OIL {
	vals = slices.Clone(vals)
	slices.SortFunc(vals, bsonx.Compare)
	out := OIL{}
	for i, v := range vals {
		if i > 0 && bsonx.Compare(vals[i-1], v) == 0 {
			continue
		}
		out = append(out, point(v))
	}
	return out
}

// typeBracket is the interval of values a comparison with v can match:
// MongoDB's comparison operators only match values of v's canonical type
// ({a: {$gt: 5}} never matches a string). ok is false for operands whose
// matches the planner does not bound.
func typeBracket(v bsoncore.Value) (Interval, bool) {
	if f, ok := bsonx.AsFloat64(v); ok && math.IsNaN(f) {
		return Interval{}, false
	}
	iv, ok := typeBrackets[v.Type]
	return iv, ok
}

// typeBrackets holds typeBracket's intervals, built once: every read of an
// indexed range needs one, and their values are never written.
var typeBrackets = func() map[bsoncore.Type]Interval {
	var hiOID bson.ObjectID
	for i := range hiOID {
		hiOID[i] = 0xff
	}
	num := Interval{Lo: doubleValue(math.Inf(-1)), Hi: doubleValue(math.Inf(1)), LoIncl: true, HiIncl: true}
	return map[bsoncore.Type]Interval{
		bsoncore.TypeInt32:     num,
		bsoncore.TypeInt64:     num,
		bsoncore.TypeDouble:    num,
		bsoncore.TypeString:    {Lo: stringValue(""), Hi: emptyDocValue(), LoIncl: true},
		bsoncore.TypeDateTime:  {Lo: dateValue(math.MinInt64), Hi: dateValue(math.MaxInt64), LoIncl: true, HiIncl: true},
		bsoncore.TypeTimestamp: {Lo: timestampValue(0, 0), Hi: timestampValue(math.MaxUint32, math.MaxUint32), LoIncl: true, HiIncl: true},
		bsoncore.TypeObjectID:  {Lo: oidValue(bson.ObjectID{}), Hi: oidValue(hiOID), LoIncl: true, HiIncl: true},
		bsoncore.TypeBoolean:   {Lo: boolValue(false), Hi: boolValue(true), LoIncl: true, HiIncl: true},
	}
}()

func doubleValue(f float64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, f)}
}

func stringValue(s string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, s)}
}

func emptyDocValue() bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: []byte{5, 0, 0, 0, 0}}
}

func dateValue(ms int64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, ms)}
}

func timestampValue(t, i uint32) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeTimestamp, Data: bsoncore.AppendTimestamp(nil, t, i)}
}

func oidValue(id bson.ObjectID) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeObjectID, Data: bsoncore.AppendObjectID(nil, id)}
}

func boolValue(b bool) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeBoolean, Data: bsoncore.AppendBoolean(nil, b)}
}

// rangeOIL bounds a comparison operator: the part of v's type bracket on
// the operator's side of v.
func rangeOIL(op string, v bsoncore.Value) (OIL, bool) {
	iv, ok := typeBracket(v)
	if !ok {
		return nil, false
	}
	switch op {
	case "$gt":
		iv.Lo, iv.LoIncl = v, false
	case "$gte":
		iv.Lo, iv.LoIncl = v, true
	case "$lt":
		iv.Hi, iv.HiIncl = v, false
	case "$lte":
		iv.Hi, iv.HiIncl = v, true
	}
	if c := bsonx.Compare(iv.Lo, iv.Hi); c > 0 || c == 0 && !(iv.LoIncl && iv.HiIncl) {
		return OIL{}, true // {$gt: +inf}: nothing
	}
	return OIL{iv}, true
}

// reversed is the list as a descending field or a backward scan reads it:
// last interval first, each with its ends swapped.
func (o OIL) reversed() []Interval {
	in := o.intervals()
	out := make([]Interval, len(in))
	for i, iv := range in {
		out[len(in)-1-i] = Interval{Lo: iv.Hi, Hi: iv.Lo, LoIncl: iv.HiIncl, HiIncl: iv.LoIncl}
	}
	return out
}

// String renders an interval as MongoDB's explain does: "[3, 3]",
// "(5, inf.0]", "[MinKey, MaxKey]".
func (iv Interval) String() string {
	var b strings.Builder
	if iv.LoIncl {
		b.WriteByte('[')
	} else {
		b.WriteByte('(')
	}
	b.WriteString(formatValue(iv.Lo))
	b.WriteString(", ")
	b.WriteString(formatValue(iv.Hi))
	if iv.HiIncl {
		b.WriteByte(']')
	} else {
		b.WriteByte(')')
	}
	return b.String()
}

// formatValue prints a bound value as MongoDB's BSONElement::toString does
// in index bounds.
func formatValue(v bsoncore.Value) string {
	switch v.Type {
	case bsoncore.TypeMinKey:
		return "MinKey"
	case bsoncore.TypeMaxKey:
		return "MaxKey"
	case bsoncore.TypeNull:
		return "null"
	case bsoncore.TypeUndefined:
		return "undefined"
	case bsoncore.TypeInt32:
		return strconv.FormatInt(int64(v.Int32()), 10)
	case bsoncore.TypeInt64:
		return strconv.FormatInt(v.Int64(), 10)
	case bsoncore.TypeDouble:
		return formatDouble(v.Double())
	case bsoncore.TypeString:
		return strconv.Quote(v.StringValue())
	case bsoncore.TypeBoolean:
		return strconv.FormatBool(v.Boolean())
	case bsoncore.TypeDateTime:
		return "new Date(" + strconv.FormatInt(v.DateTime(), 10) + ")"
	case bsoncore.TypeTimestamp:
		t, i := v.Timestamp()
		return "Timestamp(" + strconv.FormatUint(uint64(t), 10) + ", " + strconv.FormatUint(uint64(i), 10) + ")"
	case bsoncore.TypeObjectID:
		return "ObjectId('" + bson.ObjectID(v.ObjectID()).Hex() + "')"
	case bsoncore.TypeEmbeddedDocument:
		return formatDoc(v.Document())
	}
	return v.String()
}

// formatDouble prints doubles as MongoDB does: integral values with ".0",
// infinities as "inf.0" and "-inf.0".
func formatDouble(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf.0"
	case math.IsInf(f, -1):
		return "-inf.0"
	case math.IsNaN(f):
		return "nan.0"
	case f == math.Trunc(f) && math.Abs(f) < 1e15:
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func formatDoc(d bsoncore.Document) string {
	elems, _ := d.Elements()
	if len(elems) == 0 {
		return "{}"
	}
	parts := make([]string, len(elems))
	for i, el := range elems {
		parts[i] = el.Key() + ": " + formatValue(el.Value())
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}
