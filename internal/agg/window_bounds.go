package agg

import (
	"math"
	"sort"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Window bounds of $setWindowFields: {documents: [lo, hi]} counts
// documents from the current one in sort order; {range: [lo, hi]} takes
// the documents whose sortBy value lies within [v+lo, v+hi] of the current
// value v (numbers, or dates with unit). A bound is an integer (a number
// for range), "current" or "unbounded". Without a window the bounds are
// the whole partition.

// MongoDB's codes for window bounds.
const (
	codeBoundsBackward  = mongoerr.BoundsBackward // lower bound above upper bound
	codeDocBoundsNoSort = mongoerr.DocBoundsNoSort
	codeRangeBoundsSort = mongoerr.RangeBoundsSort
	codeRangeNotNumber  = mongoerr.RangeNotNumber  // sortBy value not a number in a range window
	codeRangeNotDate    = mongoerr.RangeNotDate    // sortBy value not a date in a time-range window
	codeRangeDateNoUnit = mongoerr.RangeDateNoUnit // a date sortBy value with a unitless range
)

// boundKind is what a bound is.
type boundKind int

const (
	boundUnbounded boundKind = iota
	boundCurrent
	boundValue
)

type bound struct {
	kind boundKind
	n    int64          // documents windows: the offset
	v    bsoncore.Value // range windows: the offset
}

// windowBounds is a parsed window.
type windowBounds struct {
	isRange bool
	unit    string // range windows over dates
	lo, hi  bound
}

// wholePartition is the default window.
var wholePartition = windowBounds{lo: bound{kind: boundUnbounded}, hi: bound{kind: boundUnbounded}}

func (w windowBounds) unbounded() bool {
	return w.lo.kind == boundUnbounded && w.hi.kind == boundUnbounded
}

// timeUnits are the units of time-range windows, $derivative and
// $integral, with their fixed lengths in milliseconds (0: calendar units).
var timeUnits = map[string]int64{
	"year": 0, "quarter": 0, "month": 0,
	"week": 7 * 24 * 3600 * 1000, "day": 24 * 3600 * 1000, "hour": 3600 * 1000,
	"minute": 60 * 1000, "second": 1000, "millisecond": 1,
}

func windowErr(format string, args ...any) error {
	return mongoerr.New(mongoerr.FailedToParse, format, args...)
}

// parseWindow parses the window field; sortFields is the number of sortBy
// fields (0 without sortBy).
func parseWindow(v bsoncore.Value, sortFields int) (windowBounds, error) {
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return windowBounds{}, windowErr("'window' field must be an object")
	}
	var docs, rng, unit bsoncore.Value
	fs := fieldsOf(v)
	for _, f := range fs {
		switch f.Name {
		case "documents":
			docs = f.Value
		case "range":
			rng = f.Value
		case "unit":
			unit = f.Value
		default:
			return windowBounds{}, windowErr("'window' field can only contain 'documents' as the only argument or 'range' with an optional 'unit' field")
		}
	}
	switch {
	case docs.Type != 0 && rng.Type != 0:
		return windowBounds{}, windowErr("'window' field can only contain 'documents' as the only argument or 'range' with an optional 'unit' field")
	case docs.Type == 0 && rng.Type == 0:
		return windowBounds{}, windowErr("'window' field must specify either 'documents' or 'range'")
	}
	w := windowBounds{isRange: rng.Type != 0}
	arr := docs
	if w.isRange {
		arr = rng
		if unit.Type != 0 {
			if unit.Type != bsoncore.TypeString {
				return windowBounds{}, windowErr("'unit' must be a string")
			}
			if _, ok := timeUnits[unit.StringValue()]; !ok {
				return windowBounds{}, mongoerr.New(mongoerr.FailedToParse, "unknown time unit value: %s", unit.StringValue())
			}
			w.unit = unit.StringValue()
		}
	} else if len(fs) != 1 {
		return windowBounds{}, windowErr("'window' field that specifies documents cannot have other fields")
	}
	vals := arrayValues(arr)
	if arr.Type != bsoncore.TypeArray || len(vals) != 2 {
		return windowBounds{}, windowErr("Window bounds must be a 2-element array: %s", printValue(arr))
	}
	var err error
	if w.lo, err = parseBound(vals[0], w); err != nil {
		return windowBounds{}, err
	}
	if w.hi, err = parseBound(vals[1], w); err != nil {
		return windowBounds{}, err
	}
	if err := w.checkForward(); err != nil {
		return windowBounds{}, err
	}
	if !w.unbounded() {
		if !w.isRange && sortFields == 0 {
			return windowBounds{}, errorf(codeDocBoundsNoSort, "Document-based bounds require a sortBy")
		}
		if w.isRange && sortFields != 1 {
			return windowBounds{}, errorf(codeRangeBoundsSort, "Range-based bounds require sortBy a single field")
		}
	}
	return w, nil
}

func parseBound(v bsoncore.Value, w windowBounds) (bound, error) {
	if v.Type == bsoncore.TypeString {
		switch v.StringValue() {
		case "unbounded":
			return bound{kind: boundUnbounded}, nil
		case "current":
			return bound{kind: boundCurrent}, nil
		}
		return bound{}, windowErr("Window bounds must be 'unbounded', 'current', or a number: %s", printValue(v))
	}
	if !isNumber(v) {
		return bound{}, windowErr("Window bounds must be 'unbounded', 'current', or a number: %s", printValue(v))
	}
	f, _ := bsonx.AsFloat64(v)
	integral := f == math.Trunc(f) && !math.IsInf(f, 0)
	switch {
	case !w.isRange && !integral:
		return bound{}, windowErr("Numeric document-based bounds must be an integer")
	case w.isRange && w.unit != "" && !integral:
		return bound{}, windowErr("With 'unit', range-based bounds must be an integer")
	}
	return bound{kind: boundValue, n: int64(f), v: v}, nil
}

// checkForward refuses a lower bound above the upper one (5339900):
// "unbounded" is minus infinity below and infinity above, "current" 0.
func (w windowBounds) checkForward() error {
	pos := func(b bound, unbounded float64) float64 {
		switch b.kind {
		case boundUnbounded:
			return unbounded
		case boundCurrent:
			return 0
		}
		f, _ := bsonx.AsFloat64(b.v)
		return f
	}
	if pos(w.lo, math.Inf(-1)) > pos(w.hi, math.Inf(1)) {
		return errorf(codeBoundsBackward, "Lower bound must not exceed upper bound: [%s, %s]", boundString(w.lo), boundString(w.hi))
	}
	return nil
}

func boundString(b bound) string {
	switch b.kind {
	case boundUnbounded:
		return `"unbounded"`
	case boundCurrent:
		return `"current"`
	}
	return printValue(b.v)
}

// span returns the window [a, b] (inclusive indexes; a > b when empty) of
// document i of p.
func (w windowBounds) span(p *partition, i int) (int, int, error) {
	n := len(p.docs)
	if !w.isRange {
		a, b := int64(0), int64(n-1)
		switch w.lo.kind {
		case boundCurrent:
			a = int64(i)
		case boundValue:
			a = int64(i) + w.lo.n
		}
		switch w.hi.kind {
		case boundCurrent:
			b = int64(i)
		case boundValue:
			b = int64(i) + w.hi.n
		}
		a = max(0, min(a, int64(n)))
		b = max(-1, min(b, int64(n-1)))
		return int(a), int(b), nil
	}
	if w.unbounded() {
		return 0, n - 1, nil
	}
	vals, err := p.rangeValues(w.unit)
	if err != nil {
		return 0, 0, err
	}
	cur := vals[i]
	lo, hi := math.Inf(-1), math.Inf(1)
	if w.lo.kind != boundUnbounded {
		if lo, err = w.offset(cur, w.lo); err != nil {
			return 0, 0, err
		}
	}
	if w.hi.kind != boundUnbounded {
		if hi, err = w.offset(cur, w.hi); err != nil {
			return 0, 0, err
		}
	}
	if p.desc {
		a := sort.Search(n, func(j int) bool { return vals[j] <= hi })
		b := sort.Search(n, func(j int) bool { return vals[j] < lo }) - 1
		return a, b, nil
	}
	a := sort.Search(n, func(j int) bool { return vals[j] >= lo })
	b := sort.Search(n, func(j int) bool { return vals[j] > hi }) - 1
	return a, b, nil
}

// offset is cur moved by a range bound: a number added, or for dates a
// number of units.
func (w windowBounds) offset(cur float64, b bound) (float64, error) {
	if b.kind == boundCurrent {
		return cur, nil
	}
	if w.unit == "" {
		f, _ := bsonx.AsFloat64(b.v)
		return cur + f, nil
	}
	ms, err := expr.AddDateUnits(int64(cur), w.unit, b.n)
	return float64(ms), err
}
