package agg

import (
	"math/big"
	"strconv"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Window functions of $setWindowFields. The accumulators ($sum … $topN,
// but not $mergeObjects) fold the documents of each document's window;
// the others are defined over the partition: $rank, $denseRank and
// $documentNumber (one sortBy field, no window), $shift (a sortBy, no
// window), $derivative and $integral (over the sortBy values, dates in
// units), $expMovingAvg, $covariancePop/$covarianceSamp, $locf and
// $linearFill. Parse errors are FailedToParse unless MongoDB has a
// location code.

// windowFn computes an output field for every document of a partition.
type windowFn interface {
	values(rc *runContext, p *partition) ([]bsoncore.Value, error)
}

// MongoDB's codes for rank-style functions and the window memory limit.
const (
	codeRankWindow   = mongoerr.RankWindow   // a window on $rank & co.
	codeRankSort     = mongoerr.RankSort     // they need exactly one sortBy field
	codeWindowMemory = mongoerr.WindowMemory // window values over the memory budget
)

// windowSpecials are the window functions that are not accumulators.
var windowSpecials = map[string]func(op string, arg bsoncore.Value, window bsoncore.Value, s *setWindowFieldsStage, pc *parseContext) (windowFn, error){
	"$rank":           parseRankFn,
	"$denseRank":      parseRankFn,
	"$documentNumber": parseRankFn,
	"$shift":          parseShiftFn,
	"$derivative":     parseCalculusFn,
	"$integral":       parseCalculusFn,
	"$expMovingAvg":   parseExpMovingAvgFn,
	"$covariancePop":  parseCovarianceFn,
	"$covarianceSamp": parseCovarianceFn,
	"$locf":           parseFillFn,
	"$linearFill":     parseFillFn,
}

func parseWindowFn(name string, v bsoncore.Value, s *setWindowFieldsStage, pc *parseContext) (windowFn, error) {
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return nil, windowErr("The field '%s' must be an object", name)
	}
	fs := fieldsOf(v)
	op, arg, err := windowFnName(fs)
	if err != nil {
		return nil, err
	}
	window := getField(fs, "window")
	if p, ok := windowSpecials[op]; ok {
		return p(op, arg, window, s, pc)
	}
	if _, ok := accumulators[op]; !ok || op == "$mergeObjects" {
		return nil, windowErr("Unrecognized window function, %s", op)
	}
	bounds := wholePartition
	if window.Type != 0 {
		if bounds, err = parseWindow(window, s.sortFields); err != nil {
			return nil, err
		}
	}
	a, err := parseAccumulator("window", docValue(bsoncore.NewDocumentBuilder().AppendValue(op, arg).Build()), pc)
	if err != nil {
		return nil, err
	}
	return &accWindow{acc: a, bounds: bounds}, nil
}

// accWindow folds an accumulator over each document's window. With an
// unbounded lower bound the windows only grow, so one accumulator serves
// the whole partition. The arrays and documents it builds count against
// the stage's memory budget: $push or $addToSet over growing windows makes
// a partition of n documents hold O(n²) values, which MongoDB refuses
// (5414201) rather than spills. (Scalars, a few bytes a document, are not
// counted.)
type accWindow struct {
	acc    accSpec
	bounds windowBounds
}

func (w *accWindow) values(rc *runContext, p *partition) ([]bsoncore.Value, error) {
	args, err := p.eval(w.acc.arg)
	if err != nil {
		return nil, err
	}
	nctx := rc.exprContext()
	out := make([]bsoncore.Value, len(p.docs))
	var (
		acc   accumulator
		added int
		mem   int64
	)
	growing := w.bounds.lo.kind == boundUnbounded
	for i := range p.docs {
		a, b, err := w.bounds.span(p, i)
		if err != nil {
			return nil, err
		}
		if !growing || acc == nil {
			if acc, err = w.acc.newAcc(expr.Null, nctx); err != nil {
				return nil, err
			}
			added = a
		}
		for ; added <= b; added++ {
			if _, err := acc.add(args[added]); err != nil {
				return nil, err
			}
		}
		if out[i], err = acc.result(); err != nil {
			return nil, err
		}
		if t := out[i].Type; t == bsoncore.TypeArray || t == bsoncore.TypeEmbeddedDocument {
			if mem += int64(len(out[i].Data)); mem > rc.opts.MaxMemory {
				return nil, errorf(codeWindowMemory, "Exceeded memory limit in DocumentSourceSetWindowFields, used %d bytes but max allowed is %d", mem, rc.opts.MaxMemory)
			}
		}
	}
	return out, nil
}

// noWindow rejects a window on a function that takes none.
func noWindow(op string, window bsoncore.Value) error {
	if window.Type != 0 {
		return windowErr("'window' field is not allowed in %s", op)
	}
	return nil
}

type rankFn struct{ op string }

func parseRankFn(op string, arg, window bsoncore.Value, s *setWindowFieldsStage, _ *parseContext) (windowFn, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument || len(fieldsOf(arg)) != 0 {
		return nil, windowErr("%s must be specified with '{}' as the value", op)
	}
	if window.Type != 0 {
		return nil, errorf(codeRankWindow, "Rank style window functions take no other arguments")
	}
	if op != "$documentNumber" && s.sortFields != 1 || op == "$documentNumber" && s.sortFields > 1 {
		return nil, errorf(codeRankSort, "%s must be specified with a top level sortBy expression with exactly one element", op)
	}
	return rankFn{op}, nil
}

func (r rankFn) values(_ *runContext, p *partition) ([]bsoncore.Value, error) {
	out := make([]bsoncore.Value, len(p.docs))
	rank, dense := int64(0), int64(0)
	for i := range p.docs {
		tie := i > 0 && p.sort != nil && p.sort.CompareKeys(p.keys[i-1], p.keys[i]) == 0
		if !tie {
			rank, dense = int64(i+1), dense+1
		}
		switch r.op {
		case "$rank":
			out[i] = expr.IntOrLong(rank)
		case "$denseRank":
			out[i] = expr.IntOrLong(dense)
		default:
			out[i] = expr.IntOrLong(int64(i + 1))
		}
	}
	return out, nil
}

// shiftFn is $shift: output evaluated on the document by positions away
// in the partition, default (a constant, null by default) beyond its ends.
type shiftFn struct {
	output expr.Expr
	by     int64
	def    bsoncore.Value
}

func parseShiftFn(op string, arg, window bsoncore.Value, s *setWindowFieldsStage, pc *parseContext) (windowFn, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, windowErr("Argument to $shift must be an object")
	}
	if err := noWindow(op, window); err != nil {
		return nil, err
	}
	if s.sort == nil {
		return nil, windowErr("'%s' requires a sortBy", op)
	}
	f := &shiftFn{def: expr.Null}
	var output, by bsoncore.Value
	for _, fl := range fieldsOf(arg) {
		switch fl.Name {
		case "output":
			output = fl.Value
		case "by":
			by = fl.Value
		case "default":
			e, err := expr.ParseIn(fl.Value, pc.scope)
			if err != nil {
				return nil, err
			}
			dctx := expr.NewContext(emptyDoc)
			dctx.SetCollator(pc.opts.collator())
			v, err := e.Eval(dctx)
			if err != nil || fl.Value.Type == bsoncore.TypeString && len(fl.Value.StringValue()) > 0 && fl.Value.StringValue()[0] == '$' {
				return nil, windowErr("'$shift:default' expression must yield a constant value.")
			}
			f.def = copyValue(v)
		default:
			return nil, windowErr("Unknown argument in $shift")
		}
	}
	if output.Type == 0 {
		return nil, windowErr("$shift requires an 'output' expression.")
	}
	if by.Type == 0 {
		return nil, windowErr("$shift requires 'by' as an integer value.")
	}
	n, ok := expr.Integral64(by)
	if !ok {
		return nil, windowErr("'$shift:by' field must be an integer, but found %s", printValue(by))
	}
	f.by = n
	var err error
	if f.output, err = expr.ParseIn(output, pc.scope); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *shiftFn) values(_ *runContext, p *partition) ([]bsoncore.Value, error) {
	vals, err := p.eval(f.output)
	if err != nil {
		return nil, err
	}
	out := make([]bsoncore.Value, len(p.docs))
	for i := range p.docs {
		j := int64(i) + f.by
		if j < 0 || j >= int64(len(p.docs)) {
			out[i] = f.def
			continue
		}
		out[i] = vals[j]
	}
	return out, nil
}

// calculusFn is $derivative (the slope between the first and last
// documents of the window) or $integral (the trapezoidal area over the
// window), with the sortBy values as x, dates in units.
type calculusFn struct {
	op     string
	input  expr.Expr
	unit   string
	bounds windowBounds
}

func parseCalculusFn(op string, arg, window bsoncore.Value, s *setWindowFieldsStage, pc *parseContext) (windowFn, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, windowErr("%s expects an object argument", op)
	}
	if s.sortFields != 1 {
		return nil, windowErr("%s requires a sortBy that has exactly one field", op)
	}
	f := &calculusFn{op: op, bounds: wholePartition}
	var input bsoncore.Value
	for _, fl := range fieldsOf(arg) {
		switch fl.Name {
		case "input":
			input = fl.Value
		case "unit":
			if fl.Value.Type != bsoncore.TypeString {
				return nil, windowErr("%s 'unit' must be a string", op)
			}
			l, ok := timeUnits[fl.Value.StringValue()]
			if !ok {
				return nil, mongoerr.New(mongoerr.FailedToParse, "unknown time unit value: %s", fl.Value.StringValue())
			}
			if l == 0 {
				return nil, windowErr("%s 'unit' must be a fixed length of time: week or smaller", op)
			}
			f.unit = fl.Value.StringValue()
		default:
			return nil, windowErr("%s got unexpected argument: %s", op, fl.Name)
		}
	}
	if input.Type == 0 {
		return nil, windowErr("%s requires an 'input' expression", op)
	}
	var err error
	if f.input, err = expr.ParseIn(input, pc.scope); err != nil {
		return nil, err
	}
	switch {
	case window.Type != 0:
		if f.bounds, err = parseWindow(window, s.sortFields); err != nil {
			return nil, err
		}
	case op == "$derivative":
		return nil, windowErr("$derivative requires explicit window bounds")
	}
	return f, nil
}

func (f *calculusFn) values(_ *runContext, p *partition) ([]bsoncore.Value, error) {
	ys, err := p.eval(f.input)
	if err != nil {
		return nil, err
	}
	xs, err := p.rangeValues(f.unit)
	if err != nil {
		return nil, err
	}
	scale := 1.0
	if f.unit != "" {
		scale = float64(timeUnits[f.unit])
	}
	y := func(i int) (float64, error) {
		if !isNumber(ys[i]) {
			return 0, mongoerr.New(mongoerr.TypeMismatch, "%s input must be numeric, got %s", f.op, typeName(ys[i]))
		}
		v, _ := bsonx.AsFloat64(ys[i])
		return v, nil
	}
	out := make([]bsoncore.Value, len(p.docs))
	for i := range p.docs {
		a, b, err := f.bounds.span(p, i)
		if err != nil {
			return nil, err
		}
		if f.op == "$derivative" {
			if b-a < 1 {
				out[i] = expr.Null
				continue
			}
			y1, err := y(a)
			if err != nil {
				return nil, err
			}
			y2, err := y(b)
			if err != nil {
				return nil, err
			}
			out[i] = expr.Double((y2 - y1) / (xs[b] - xs[a]) * scale)
			continue
		}
		if a > b {
			out[i] = expr.Null
			continue
		}
		sum := 0.0
		for j := a; j < b; j++ {
			y1, err := y(j)
			if err != nil {
				return nil, err
			}
			y2, err := y(j + 1)
			if err != nil {
				return nil, err
			}
			sum += (xs[j+1] - xs[j]) * (y1 + y2) / 2
		}
		out[i] = expr.Double(sum / scale)
	}
	return out, nil
}

// expMovingAvgFn is $expMovingAvg: r = alpha*x + (1-alpha)*r over the
// partition, alpha given or 2/(N+1); non-numbers are skipped (their
// documents get the running value, null before the first number).
type expMovingAvgFn struct {
	input expr.Expr
	alpha *big.Float
}

func parseExpMovingAvgFn(op string, arg, window bsoncore.Value, s *setWindowFieldsStage, pc *parseContext) (windowFn, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, windowErr("$expMovingAvg must have an object argument")
	}
	if err := noWindow(op, window); err != nil {
		return nil, err
	}
	if s.sort == nil {
		return nil, windowErr("$expMovingAvg requires an explicit 'sortBy'")
	}
	f := &expMovingAvgFn{}
	var input, n, alpha bsoncore.Value
	for _, fl := range fieldsOf(arg) {
		switch fl.Name {
		case "input":
			input = fl.Value
		case "N":
			n = fl.Value
		case "alpha":
			alpha = fl.Value
		default:
			return nil, windowErr("Got unrecognized field in $expMovingAvg, $expMovingAvg sub object must have exactly two fields: An 'input' field, and either an 'N' field or an 'alpha' field")
		}
	}
	if input.Type == 0 || (n.Type == 0) == (alpha.Type == 0) {
		return nil, windowErr("$expMovingAvg sub object must have exactly two fields: An 'input' field, and either an 'N' field or an 'alpha' field")
	}
	if n.Type != 0 {
		k, ok := expr.Integral64(n)
		if !ok || k <= 0 {
			return nil, windowErr("'N' field must be an integer greater than zero, but found %s", printValue(n))
		}
		// N+1 in the big float: N may be math.MaxInt64.
		n1 := new(big.Float).SetPrec(200).SetInt64(k)
		n1.Add(n1, big.NewFloat(1))
		f.alpha = new(big.Float).SetPrec(200).Quo(big.NewFloat(2).SetPrec(200), n1)
	} else {
		a, ok := bsonx.AsFloat64(alpha)
		if !ok || !isNumber(alpha) || a <= 0 || a >= 1 {
			return nil, windowErr("'alpha' must be between 0 and 1 (exclusive), found %s", printValue(alpha))
		}
		f.alpha = decimalish(a)
	}
	var err error
	if f.input, err = expr.ParseIn(input, pc.scope); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *expMovingAvgFn) values(_ *runContext, p *partition) ([]bsoncore.Value, error) {
	xs, err := p.eval(f.input)
	if err != nil {
		return nil, err
	}
	// MongoDB computes in decimal128 (alpha = 2/(N+1) in decimal, doubles
	// converted with 15 digits); a 200-bit float over the same inputs
	// rounds back to the same doubles.
	alpha := f.alpha
	rest := new(big.Float).SetPrec(200).Sub(big.NewFloat(1).SetPrec(200), alpha)
	out := make([]bsoncore.Value, len(p.docs))
	cur := expr.Null
	var r *big.Float
	for i, x := range xs {
		if isNumber(x) {
			v, _ := bsonx.AsFloat64(x)
			xv := decimalish(v)
			if r == nil {
				r = xv
			} else {
				a := new(big.Float).SetPrec(200).Mul(alpha, xv)
				b := new(big.Float).SetPrec(200).Mul(rest, r)
				r = a.Add(a, b)
			}
			d, _ := r.Float64()
			cur = expr.Double(d)
		}
		out[i] = cur
	}
	return out, nil
}

// decimalish is v rounded to 15 significant digits (MongoDB's conversion
// of a double to decimal128) as a 200-bit float.
func decimalish(v float64) *big.Float {
	f, _, err := big.ParseFloat(strconv.FormatFloat(v, 'g', 15, 64), 10, 200, big.ToNearestEven)
	if err != nil {
		return new(big.Float).SetPrec(200).SetFloat64(v)
	}
	return f
}

// covarianceFn is $covariancePop or $covarianceSamp of [x, y] over the
// window, skipping pairs that are not both numbers.
type covarianceFn struct {
	sample bool
	x, y   expr.Expr
	bounds windowBounds
}

func parseCovarianceFn(op string, arg, window bsoncore.Value, s *setWindowFieldsStage, pc *parseContext) (windowFn, error) {
	vals := arrayValues(arg)
	if arg.Type != bsoncore.TypeArray || len(vals) != 2 {
		return nil, windowErr("%s requires an array of two expressions", op)
	}
	f := &covarianceFn{sample: op == "$covarianceSamp", bounds: wholePartition}
	var err error
	if f.x, err = expr.ParseIn(vals[0], pc.scope); err != nil {
		return nil, err
	}
	if f.y, err = expr.ParseIn(vals[1], pc.scope); err != nil {
		return nil, err
	}
	if window.Type != 0 {
		if f.bounds, err = parseWindow(window, s.sortFields); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func (f *covarianceFn) values(_ *runContext, p *partition) ([]bsoncore.Value, error) {
	xs, err := p.eval(f.x)
	if err != nil {
		return nil, err
	}
	ys, err := p.eval(f.y)
	if err != nil {
		return nil, err
	}
	out := make([]bsoncore.Value, len(p.docs))
	for i := range p.docs {
		a, b, err := f.bounds.span(p, i)
		if err != nil {
			return nil, err
		}
		var n, mx, my, c float64
		for j := a; j <= b; j++ {
			if !isNumber(xs[j]) || !isNumber(ys[j]) {
				continue
			}
			x, _ := bsonx.AsFloat64(xs[j])
			y, _ := bsonx.AsFloat64(ys[j])
			n++
			dx := x - mx
			mx += dx / n
			my += (y - my) / n
			c += dx * (y - my)
		}
		d := n
		if f.sample {
			d--
		}
		if d <= 0 {
			out[i] = expr.Null
			continue
		}
		out[i] = expr.Double(c / d)
	}
	return out, nil
}

// fillFn is $locf (the last non-null value so far) or $linearFill
// (nulls between two numbers interpolated along the sortBy values).
type fillFn struct {
	linear bool
	input  expr.Expr
}

func parseFillFn(op string, arg, window bsoncore.Value, s *setWindowFieldsStage, pc *parseContext) (windowFn, error) {
	if err := noWindow(op, window); err != nil {
		return nil, err
	}
	f := &fillFn{linear: op == "$linearFill"}
	if f.linear && s.sortFields != 1 {
		return nil, windowErr("$linearFill requires a sortBy that has exactly one field")
	}
	var err error
	if f.input, err = expr.ParseIn(arg, pc.scope); err != nil {
		return nil, err
	}
	return f, nil
}

// codeLinearFillType is $linearFill over a value that is not a number.
const codeLinearFillType = mongoerr.LinearFillType

func (f *fillFn) values(_ *runContext, p *partition) ([]bsoncore.Value, error) {
	vals, err := p.eval(f.input)
	if err != nil {
		return nil, err
	}
	out := make([]bsoncore.Value, len(vals))
	if !f.linear {
		last := expr.Null
		for i, v := range vals {
			if !expr.IsNullish(v) {
				last = v
			}
			out[i] = last
		}
		return out, nil
	}
	// after[i] is the first non-null index past i (-1 for none), found in
	// one backward pass: scanning forward from each null made a long run
	// of nulls quadratic.
	after := make([]int, len(vals))
	for i, next := len(vals)-1, -1; i >= 0; i-- {
		after[i] = next
		if !expr.IsNullish(vals[i]) {
			next = i
		}
	}
	var xs []float64
	prev := -1
	for i, v := range vals {
		if !expr.IsNullish(v) {
			if !isNumber(v) {
				return nil, errorf(codeLinearFillType, "There can be no repeated values in the sort field and the input must be numeric, found %s", typeName(v))
			}
			out[i] = v
			prev = i
			continue
		}
		out[i] = expr.Null
		next := after[i]
		if prev < 0 || next < 0 || !isNumber(vals[next]) {
			continue
		}
		if xs == nil {
			unit := ""
			if v := p.sortValue(i); v.Type == bsoncore.TypeDateTime {
				unit = "millisecond"
			}
			if xs, err = p.rangeValues(unit); err != nil {
				return nil, err
			}
		}
		y1, _ := bsonx.AsFloat64(vals[prev])
		y2, _ := bsonx.AsFloat64(vals[next])
		out[i] = expr.Double(y1 + (y2-y1)*(xs[i]-xs[prev])/(xs[next]-xs[prev]))
	}
	return out, nil
}

// sortValue is the one sortBy field's value of document i.
func (p *partition) sortValue(i int) bsoncore.Value {
	p.ctx.Reset(p.docs[i])
	v, _ := p.sortPath.Eval(p.ctx)
	return v
}
