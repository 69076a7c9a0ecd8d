package expr

import (
	"math"
	"math/big"
	"math/bits"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Arithmetic operators: $add $subtract $multiply $divide $mod and the
// one-number operators $abs $ceil $floor $trunc $round. Results keep the
// narrowest type that holds them, as MongoDB does: int32 op int32 is int32
// unless it overflows (then int64, then double); any double makes a double;
// any decimal128 makes a decimal128. null or missing operands give null.

func init() {
	register("$add", parseVariadic("$add", evalAdd))
	register("$multiply", parseVariadic("$multiply", evalMultiply))
	register("$subtract", parseBinary("$subtract", evalSubtract))
	register("$divide", parseBinary("$divide", evalDivide))
	register("$mod", parseBinary("$mod", evalMod))
	register("$abs", parseUnary("$abs", evalAbs))
	register("$ceil", parseUnary("$ceil", func(n number) (bsoncore.Value, error) { return n.roundTo(0, roundCeil), nil }))
	register("$floor", parseUnary("$floor", func(n number) (bsoncore.Value, error) { return n.roundTo(0, roundFloor), nil }))
	register("$trunc", parseRound("$trunc", roundTrunc))
	register("$round", parseRound("$round", roundHalfEven))
}

// number is a numeric BSON value widened for computing.
type number struct {
	t bsoncore.Type // TypeInt32, TypeInt64, TypeDouble or TypeDecimal128
	i int64
	f float64
	d decimal
}

func numberOf(v bsoncore.Value) (number, bool) {
	switch v.Type {
	case bsoncore.TypeInt32:
		i, ok := v.Int32OK()
		return number{t: v.Type, i: int64(i)}, ok
	case bsoncore.TypeInt64:
		i, ok := v.Int64OK()
		return number{t: v.Type, i: i}, ok
	case bsoncore.TypeDouble:
		f, ok := v.DoubleOK()
		return number{t: v.Type, f: f}, ok
	case bsoncore.TypeDecimal128:
		d, ok := decimalOf(v)
		return number{t: v.Type, d: d}, ok
	}
	return number{}, false
}

func (n number) float() float64 {
	switch n.t {
	case bsoncore.TypeDouble:
		return n.f
	case bsoncore.TypeDecimal128:
		return n.d.float()
	}
	return float64(n.i)
}

func (n number) decimal() decimal {
	switch n.t {
	case bsoncore.TypeDouble:
		return decimalFromFloat(n.f)
	case bsoncore.TypeDecimal128:
		return n.d
	}
	return decimalFromInt(n.i)
}

func (n number) isZero() bool {
	switch n.t {
	case bsoncore.TypeDouble:
		return n.f == 0
	case bsoncore.TypeDecimal128:
		return n.d.isZero()
	}
	return n.i == 0
}

func (n number) value() bsoncore.Value {
	switch n.t {
	case bsoncore.TypeInt32:
		return Int32(int32(n.i))
	case bsoncore.TypeInt64:
		return Int64(n.i)
	case bsoncore.TypeDouble:
		return Double(n.f)
	}
	return n.d.value()
}

// wider is the result type of combining types a and b.
func wider(a, b bsoncore.Type) bsoncore.Type {
	order := func(t bsoncore.Type) int {
		switch t {
		case bsoncore.TypeInt32:
			return 0
		case bsoncore.TypeInt64:
			return 1
		case bsoncore.TypeDouble:
			return 2
		}
		return 3
	}
	if order(a) >= order(b) {
		return a
	}
	return b
}

// intResult turns an exact integer result of type t into a value: int32
// results that no longer fit widen to int64 (createIntOrLong).
func intResult(t bsoncore.Type, i int64) bsoncore.Value {
	if t == bsoncore.TypeInt32 {
		return IntOrLong(i)
	}
	return Int64(i)
}

type naryExpr struct {
	op   string
	args []Expr
	eval func(op string, vals []bsoncore.Value) (bsoncore.Value, error)
	// evalColl, set by collated instead of eval, is an operator that
	// compares its operands under the context's collation.
	evalColl collatedEval
}

// collatedEval evaluates an operator that compares values, under coll.
type collatedEval func(coll Collator, op string, vals []bsoncore.Value) (bsoncore.Value, error)

func (e naryExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	vals, err := evalArgs(ctx, e.args)
	if err != nil {
		return Missing, err
	}
	if e.evalColl != nil {
		return e.evalColl(ctx.coll, e.op, vals)
	}
	return e.eval(e.op, vals)
}

// collated turns a parser of naryExpr (parseFixed, parseVariadic,
// parseRanged given a nil eval) into one whose operator evaluates with the
// context's collation.
func collated(p parser, eval collatedEval) parser {
	return func(arg bsoncore.Value, s *Scope) (Expr, error) {
		e, err := p(arg, s)
		if err != nil {
			return nil, err
		}
		n := e.(naryExpr)
		n.evalColl = eval
		return n, nil
	}
}

func parseVariadic(op string, eval func(string, []bsoncore.Value) (bsoncore.Value, error)) parser {
	return func(arg bsoncore.Value, s *Scope) (Expr, error) {
		args, err := parseArgs(arg, s)
		if err != nil {
			return nil, err
		}
		return naryExpr{op: op, args: args, eval: eval}, nil
	}
}

func parseBinary(op string, eval func(string, []bsoncore.Value) (bsoncore.Value, error)) parser {
	return func(arg bsoncore.Value, s *Scope) (Expr, error) {
		args, err := parseFixedArgs(op, 2, arg, s)
		if err != nil {
			return nil, err
		}
		return naryExpr{op: op, args: args, eval: eval}, nil
	}
}

// sum accumulates $add's operands: integers exactly (while they fit an
// int64), doubles in a float64, decimals exactly.
type sum struct {
	t         bsoncore.Type
	i         int64
	f         float64
	d         decimal
	overflow  bool // the integer sum left int64: continue in double
	hasDouble bool
}

func (s *sum) add(n number) {
	s.t = wider(s.t, n.t)
	switch n.t {
	case bsoncore.TypeDecimal128:
		s.d = s.d.add(n.d)
	case bsoncore.TypeDouble:
		s.f += n.f
		s.hasDouble = true
	default:
		r, carry := addInt64(s.i, n.i)
		if carry {
			s.overflow, s.hasDouble = true, true
			s.f += float64(s.i) + float64(n.i)
			s.i = 0
			return
		}
		s.i = r
	}
}

func addInt64(a, b int64) (int64, bool) {
	r := a + b
	return r, (a > 0 && b > 0 && r < 0) || (a < 0 && b < 0 && r >= 0)
}

// decimal is the total as a decimal: the double part converted as MongoDB
// converts doubles (15 significant digits), the integer part exactly.
func (s *sum) decimal() decimal {
	d := s.d.add(decimalFromInt(s.i))
	if s.hasDouble {
		d = d.add(decimalFromFloat(s.f))
	}
	return d
}

func (s *sum) result() bsoncore.Value {
	switch {
	case s.t == bsoncore.TypeDecimal128:
		return s.decimal().value()
	case s.t == bsoncore.TypeDouble || s.overflow:
		return Double(s.f + float64(s.i))
	}
	return intResult(s.t, s.i)
}

func evalAdd(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	s := sum{t: bsoncore.TypeInt32, d: decimalFromInt(0)}
	date, haveDate := int64(0), false
	for _, v := range vals {
		if v.Type == bsoncore.TypeDateTime {
			if haveDate {
				return Missing, errorf(codeAddTwoDates, "only one date allowed in an $add expression")
			}
			haveDate = true
			date, _ = v.DateTimeOK()
			continue
		}
		n, ok := numberOf(v)
		if !ok {
			if IsNullish(v) {
				return Null, nil
			}
			return Missing, errorf(codeAddType, "$add only supports numeric or date types, not %s", TypeName(v))
		}
		s.add(n)
	}
	if !haveDate {
		return s.result(), nil
	}
	var delta float64
	switch s.t {
	case bsoncore.TypeDecimal128:
		delta = s.decimal().float()
	default:
		delta = s.f + float64(s.i)
	}
	ms := float64(date) + math.Round(delta)
	if math.IsNaN(ms) || ms >= 0x1p63 || ms < -0x1p63 {
		return Missing, errorf(codeOverflow, "date overflow in $add")
	}
	return Date(int64(ms)), nil
}

func evalMultiply(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	t := bsoncore.TypeInt32
	prodI, prodF, prodD := int64(1), 1.0, decimalFromInt(1)
	overflow := false
	var nums []number
	for _, v := range vals {
		n, ok := numberOf(v)
		if !ok {
			if IsNullish(v) {
				return Null, nil
			}
			return Missing, errorf(codeMultiplyType, "$multiply only supports numeric types, not %s", TypeName(v))
		}
		nums = append(nums, n)
		t = wider(t, n.t)
	}
	for _, n := range nums {
		switch {
		case t == bsoncore.TypeDecimal128:
			prodD = prodD.mul(n.decimal())
		case t == bsoncore.TypeDouble || overflow:
			prodF *= n.float()
		default:
			hi, lo := bits.Mul64(uint64(abs64(prodI)), uint64(abs64(n.i)))
			neg := (prodI < 0) != (n.i < 0)
			if hi != 0 || lo > math.MaxInt64 || prodI == math.MinInt64 || n.i == math.MinInt64 {
				overflow = true
				prodF = float64(prodI) * float64(n.i)
				continue
			}
			prodI = int64(lo)
			if neg {
				prodI = -prodI
			}
		}
	}
	switch {
	case t == bsoncore.TypeDecimal128:
		return prodD.value(), nil
	case t == bsoncore.TypeDouble:
		return Double(prodF), nil
	case overflow:
		return Double(prodF), nil
	}
	return intResult(t, prodI), nil
}

func abs64(i int64) int64 {
	if i < 0 {
		return -i
	}
	return i
}

func evalSubtract(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	a, b := vals[0], vals[1]
	if IsNullish(a) || IsNullish(b) {
		return Null, nil
	}
	if a.Type == bsoncore.TypeDateTime {
		ams, _ := a.DateTimeOK()
		if b.Type == bsoncore.TypeDateTime {
			bms, _ := b.DateTimeOK()
			return Int64(ams - bms), nil
		}
		if n, ok := numberOf(b); ok {
			return Date(ams - int64(math.Round(n.float()))), nil
		}
		return Missing, errorf(codeSubtractType, "can't $subtract %s from Date", TypeName(b))
	}
	na, okA := numberOf(a)
	nb, okB := numberOf(b)
	if okA && b.Type == bsoncore.TypeDateTime {
		return Missing, errorf(codeSubtractDateFromNumber, "can't $subtract a date from a %s", TypeName(a))
	}
	if !okA || !okB {
		return Missing, errorf(codeSubtractType, "cant $subtract a%s from a%s", article(TypeName(b)), article(TypeName(a)))
	}
	t := wider(na.t, nb.t)
	switch t {
	case bsoncore.TypeDecimal128:
		return na.decimal().add(nb.decimal().neg()).value(), nil
	case bsoncore.TypeDouble:
		return Double(na.float() - nb.float()), nil
	}
	r, overflow := addInt64(na.i, -nb.i)
	if overflow || nb.i == math.MinInt64 {
		return Double(float64(na.i) - float64(nb.i)), nil
	}
	return intResult(t, r), nil
}

// article prefixes a type name with " " or "n " as MongoDB's messages do
// ("a string", "an int").
func article(name string) string {
	switch name[0] {
	case 'a', 'e', 'i', 'o', 'u':
		return "n " + name
	}
	return " " + name
}

func evalDivide(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	na, okA := numberOf(vals[0])
	nb, okB := numberOf(vals[1])
	if !okA || !okB {
		if IsNullish(vals[0]) || IsNullish(vals[1]) {
			return Null, nil
		}
		return Missing, errorf(codeDivideType, "$divide only supports numeric types, not %s and %s", TypeName(vals[0]), TypeName(vals[1]))
	}
	if nb.isZero() {
		return Missing, errorf(codeDivideByZero, "can't $divide by zero")
	}
	if na.t == bsoncore.TypeDecimal128 || nb.t == bsoncore.TypeDecimal128 {
		return na.decimal().div(nb.decimal()).value(), nil
	}
	return Double(na.float() / nb.float()), nil
}

func evalMod(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	na, okA := numberOf(vals[0])
	nb, okB := numberOf(vals[1])
	if !okA || !okB {
		if IsNullish(vals[0]) || IsNullish(vals[1]) {
			return Null, nil
		}
		return Missing, errorf(codeModType, "$mod only supports numeric types, not %s and %s", TypeName(vals[0]), TypeName(vals[1]))
	}
	if nb.isZero() {
		return Missing, errorf(codeModByZero, "can't $mod by zero")
	}
	switch {
	case na.t == bsoncore.TypeDecimal128 || nb.t == bsoncore.TypeDecimal128:
		return na.decimal().mod(nb.decimal()).value(), nil
	case na.t == bsoncore.TypeDouble || nb.t == bsoncore.TypeDouble && nb.f != math.Trunc(nb.f):
		return Double(math.Mod(na.float(), nb.float())), nil
	}
	// Integers (an integral double divisor counts as one).
	b := nb.i
	if nb.t == bsoncore.TypeDouble {
		b = int64(nb.f)
	}
	t := na.t
	if nb.t == bsoncore.TypeInt64 {
		t = bsoncore.TypeInt64
	}
	if b == -1 {
		return intResult(t, 0), nil
	}
	r := na.i % b
	if t == bsoncore.TypeInt32 {
		return Int32(int32(r)), nil
	}
	return Int64(r), nil
}

type unaryExpr struct {
	op   string
	arg  Expr
	eval func(number) (bsoncore.Value, error)
}

func parseUnary(op string, eval func(number) (bsoncore.Value, error)) parser {
	return func(arg bsoncore.Value, s *Scope) (Expr, error) {
		args, err := parseFixedArgs(op, 1, arg, s)
		if err != nil {
			return nil, err
		}
		return unaryExpr{op: op, arg: args[0], eval: eval}, nil
	}
}

func (u unaryExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	v, err := u.arg.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	n, ok := numberOf(v)
	if !ok {
		if IsNullish(v) {
			return Null, nil
		}
		return Missing, errorf(codeNumericArgType, "%s only supports numeric types, not %s", u.op, TypeName(v))
	}
	return u.eval(n)
}

func evalAbs(n number) (bsoncore.Value, error) {
	switch n.t {
	case bsoncore.TypeDouble:
		return Double(math.Abs(n.f)), nil
	case bsoncore.TypeDecimal128:
		if n.d.sign() < 0 {
			return n.d.neg().value(), nil
		}
		return n.d.value(), nil
	}
	if n.i == math.MinInt64 {
		return Missing, errorf(codeAbsLongMin, "can't take $abs of long long min")
	}
	return intResult(n.t, abs64(n.i)), nil
}

// roundTo rounds n to a multiple of 10^-places, keeping its type. Doubles
// are rounded through their exact decimal expansion (34 digits), so that
// $round of 2.675 to 2 places is 2.67, the double being just below 2.675.
func (n number) roundTo(places int, mode roundMode) bsoncore.Value {
	switch n.t {
	case bsoncore.TypeDouble:
		if math.IsNaN(n.f) || math.IsInf(n.f, 0) {
			return Double(n.f)
		}
		d := decimalFromFloatDigits(n.f, decimalDigits).quantize(-places, mode)
		return Double(d.float())
	case bsoncore.TypeDecimal128:
		return n.d.quantize(-places, mode).value()
	}
	if places >= 0 {
		return n.value()
	}
	return intResult(n.t, integralToInt64(decimalFromInt(n.i).quantize(-places, mode)))
}

// integralToInt64 turns an integral decimal into an int64, saturating.
func integralToInt64(d decimal) int64 {
	c := d.coef
	if d.exp > 0 {
		c = new(big.Int).Mul(c, pow10(d.exp))
	}
	if !c.IsInt64() {
		if c.Sign() < 0 {
			return math.MinInt64
		}
		return math.MaxInt64
	}
	return c.Int64()
}

type roundExpr struct {
	op     string
	num    Expr
	places Expr
	mode   roundMode
}

func parseRound(op string, mode roundMode) parser {
	return func(arg bsoncore.Value, s *Scope) (Expr, error) {
		args, err := parseArgs(arg, s)
		if err != nil {
			return nil, err
		}
		if len(args) < 1 || len(args) > 2 {
			return nil, errorf(codeWrongArgCount, "Expression %s takes at least 1 arguments, and at most 2, but %d were passed in.", op, len(args))
		}
		r := roundExpr{op: op, num: args[0], mode: mode}
		if len(args) == 2 {
			r.places = args[1]
		}
		return r, nil
	}
}

func (r roundExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	v, err := r.num.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	places := 0
	if r.places != nil {
		p, err := r.places.Eval(ctx)
		if err != nil {
			return Missing, err
		}
		if IsNullish(p) {
			return Null, nil
		}
		pn, ok := numberOf(p)
		if !ok {
			return Missing, errorf(codeRoundPlaceType, "%s only supports numeric types, not %s", r.op, TypeName(p))
		}
		f := pn.float()
		if f != math.Trunc(f) {
			return Missing, errorf(codeRoundPlaceIntegral, "precision argument to %s must be a integral value", r.op)
		}
		if f < -20 || f > 100 {
			return Missing, errorf(codeRoundPlaceRange, "cannot apply %s with precision value %v value must be in [-20, 100]", r.op, f)
		}
		places = int(f)
	}
	n, ok := numberOf(v)
	if !ok {
		if IsNullish(v) {
			return Null, nil
		}
		return Missing, errorf(codeNumericArgType, "%s only supports numeric types, not %s", r.op, TypeName(v))
	}
	return n.roundTo(places, r.mode), nil
}
