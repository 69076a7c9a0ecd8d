package expr

import (
	"github.com/cairndb/cairn/internal/mongoerr"
	"math"
	"math/big"
	"math/rand/v2"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Exponents, logarithms and roots: $exp $ln $log $log10 $pow $sqrt, and
// $rand. Integer and double inputs give doubles (except $pow of integers,
// which stays an integer while the result fits); decimal inputs give
// decimals. null or missing gives null; a non-number is an error, and so
// is a value outside the function's domain (a negative $sqrt, a $ln of
// zero). NaN passes through.

func init() {
	register("$exp", parseUnary("$exp", evalExp))
	register("$ln", parseUnary("$ln", evalLn))
	register("$log10", parseUnary("$log10", evalLog10))
	register("$sqrt", parseUnary("$sqrt", evalSqrt))
	register("$log", parseBinary("$log", evalLog))
	register("$pow", parseBinary("$pow", evalPow))
	register("$rand", parseRand)
}

const (
	codeSqrtNegative  = mongoerr.SqrtNegative
	codeLogArgType    = mongoerr.LogArgType
	codeLogBaseType   = mongoerr.LogBaseType
	codeLogArgDomain  = mongoerr.LogArgDomain
	codeLogBaseDomain = mongoerr.LogBaseDomain
	codeLog10Domain   = mongoerr.Log10Domain
	codePowBaseType   = mongoerr.PowBaseType
	codePowExpType    = mongoerr.PowExpType
	codePowZeroNeg    = mongoerr.PowZeroNeg
	codeLnDomain      = mongoerr.LnDomain
	codeRandArgs      = mongoerr.RandArgs
	codeExpectObject  = mongoerr.ExpectedObject // "invalid parameter: expected an object"
)

// expLimit bounds |x| for a decimal e^x: beyond it the result over- or
// underflows decimal128 (whose exponents stop near ±6144).
const expLimit = 15000

func evalExp(n number) (bsoncore.Value, error) {
	if n.t != bsoncore.TypeDecimal128 {
		return Double(math.Exp(n.float())), nil
	}
	if n.d.special != 0 {
		return decimalFromFloat(math.Exp(n.d.float())).value(), nil
	}
	x := n.d.bigFloat()
	switch {
	case x.Cmp(big.NewFloat(expLimit)) > 0:
		return decimal{special: '+'}.value(), nil
	case x.Cmp(big.NewFloat(-expLimit)) < 0:
		return decimalFromInt(0).value(), nil
	}
	return decimalFromBig(bigExp(x), 0).value(), nil
}

// positive reports whether n > 0, or is NaN (which the log functions let
// through).
func (n number) positiveOrNaN() bool {
	if n.t == bsoncore.TypeDecimal128 {
		return n.d.special == 'n' || n.d.sign() > 0
	}
	f := n.float()
	return f > 0 || f != f
}

// decimalUnary applies f to a finite positive decimal, or the double
// function g to a special one.
func decimalUnary(d decimal, preferredExp int, f func(*big.Float) *big.Float, g func(float64) float64) bsoncore.Value {
	if d.special != 0 {
		return decimalFromFloat(g(d.float())).value()
	}
	return decimalFromBig(f(d.bigFloat()), preferredExp).value()
}

func evalLn(n number) (bsoncore.Value, error) {
	if !n.positiveOrNaN() {
		return Missing, errorf(codeLnDomain, "$ln's argument must be a positive number, but is %s", n.value())
	}
	if n.t == bsoncore.TypeDecimal128 {
		return decimalUnary(n.d, 0, bigLn, math.Log), nil
	}
	return Double(math.Log(n.float())), nil
}

func evalLog10(n number) (bsoncore.Value, error) {
	if !n.positiveOrNaN() {
		return Missing, errorf(codeLog10Domain, "$log10's argument must be a positive number, but is %s", n.value())
	}
	if n.t == bsoncore.TypeDecimal128 {
		return decimalUnary(n.d, 0, func(x *big.Float) *big.Float {
			return newFloat().Quo(bigLn(x), bigLn(newFloat().SetInt64(10)))
		}, math.Log10), nil
	}
	return Double(log10(n.float())), nil
}

// log10 is math.Log10, exact for powers of ten (Go's is off by an ulp for
// some, C's is not).
func log10(x float64) float64 {
	r := math.Log10(x)
	if k := math.Round(r); k >= -323 && k <= 308 && math.Pow10(int(k)) == x {
		return k
	}
	return r
}

func evalSqrt(n number) (bsoncore.Value, error) {
	if n.t == bsoncore.TypeDecimal128 {
		if n.d.special == 0 && n.d.sign() < 0 || n.d.special == '-' {
			return Missing, errorf(codeSqrtNegative, "$sqrt's argument must be greater than or equal to 0")
		}
		if n.d.isZero() {
			return n.d.value(), nil
		}
		// The preferred exponent of an exact square root is half the
		// operand's, rounded down.
		pref := n.d.exp / 2
		if n.d.special == 0 && n.d.exp < 0 && n.d.exp%2 != 0 {
			pref--
		}
		return decimalUnary(n.d, pref, func(x *big.Float) *big.Float { return newFloat().Sqrt(x) }, math.Sqrt), nil
	}
	f := n.float()
	if f < 0 {
		return Missing, errorf(codeSqrtNegative, "$sqrt's argument must be greater than or equal to 0")
	}
	return Double(math.Sqrt(f)), nil
}

// evalLog is {$log: [number, base]}.
func evalLog(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	if IsNullish(vals[0]) || IsNullish(vals[1]) {
		return Null, nil
	}
	x, ok := numberOf(vals[0])
	if !ok {
		return Missing, errorf(codeLogArgType, "$log's argument must be numeric, not %s", TypeName(vals[0]))
	}
	b, ok := numberOf(vals[1])
	if !ok {
		return Missing, errorf(codeLogBaseType, "$log's base must be numeric, not %s", TypeName(vals[1]))
	}
	if !x.positiveOrNaN() {
		return Missing, errorf(codeLogArgDomain, "$log's argument must be a positive number, but is %s", vals[0])
	}
	if !b.positiveOrNaN() || b.isOne() {
		return Missing, errorf(codeLogBaseDomain, "$log's base must be a positive number not equal to 1, but is %s", vals[1])
	}
	if x.t == bsoncore.TypeDecimal128 || b.t == bsoncore.TypeDecimal128 {
		xd, bd := x.decimal(), b.decimal()
		if xd.special != 0 || bd.special != 0 {
			return decimalFromFloat(math.Log(xd.float()) / math.Log(bd.float())).value(), nil
		}
		return decimalFromBig(newFloat().Quo(bigLn(xd.bigFloat()), bigLn(bd.bigFloat())), 0).value(), nil
	}
	return Double(math.Log(x.float()) / math.Log(b.float())), nil
}

func (n number) isOne() bool {
	switch n.t {
	case bsoncore.TypeDecimal128:
		return n.d.special == 0 && n.d.bigFloat().Cmp(big.NewFloat(1)) == 0
	case bsoncore.TypeDouble:
		return n.f == 1
	}
	return n.i == 1
}

// evalPow is {$pow: [base, exponent]}.
func evalPow(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	if IsNullish(vals[0]) || IsNullish(vals[1]) {
		return Null, nil
	}
	b, ok := numberOf(vals[0])
	if !ok {
		return Missing, errorf(codePowBaseType, "$pow's base must be numeric, not %s", TypeName(vals[0]))
	}
	e, ok := numberOf(vals[1])
	if !ok {
		return Missing, errorf(codePowExpType, "$pow's exponent must be numeric, not %s", TypeName(vals[1]))
	}
	if b.isZero() && e.float() < 0 {
		return Missing, errorf(codePowZeroNeg, "$pow cannot take a base of 0 and a negative exponent")
	}
	switch {
	case b.t == bsoncore.TypeDecimal128 || e.t == bsoncore.TypeDecimal128:
		return powDecimal(b.decimal(), e.decimal()), nil
	case b.t == bsoncore.TypeDouble || e.t == bsoncore.TypeDouble:
		return Double(math.Pow(b.float(), e.float())), nil
	}
	r, exact := powInt(b.i, e.i)
	if !exact {
		return Double(math.Pow(float64(b.i), float64(e.i))), nil
	}
	if b.t == bsoncore.TypeInt64 || e.t == bsoncore.TypeInt64 {
		return Int64(r), nil
	}
	return IntOrLong(r), nil
}

// powInt is base^exp when it is an integer that fits an int64.
func powInt(base, exp int64) (int64, bool) {
	switch {
	case base == 1:
		return 1, true
	case base == -1:
		if exp%2 == 0 {
			return 1, true
		}
		return -1, true
	case exp < 0:
		return 0, false
	case base == 0:
		if exp == 0 {
			return 1, true
		}
		return 0, true
	case exp > 63:
		return 0, false
	}
	r := new(big.Int).Exp(big.NewInt(base), big.NewInt(exp), nil)
	return r.Int64(), r.IsInt64()
}

func powDecimal(b, e decimal) bsoncore.Value {
	if b.special != 0 || e.special != 0 {
		return decimalFromFloat(math.Pow(b.float(), e.float())).value()
	}
	bf, ef := b.bigFloat(), e.bigFloat()
	if ef.IsInt() {
		if n, acc := ef.Int64(); acc == big.Exact && n >= -10000 && n <= 10000 {
			return decimalFromBig(bigPowInt(bf, n), 0).value()
		}
	}
	neg := false
	if bf.Sign() < 0 {
		if !ef.IsInt() {
			return decimal{special: 'n'}.value()
		}
		n := new(big.Int)
		ef.Int(n)
		neg = n.Bit(0) == 1
		bf.Neg(bf)
	}
	if bf.Sign() == 0 {
		return decimalFromInt(0).value()
	}
	x := newFloat().Mul(ef, bigLn(bf))
	var r decimal
	switch {
	case x.Cmp(big.NewFloat(expLimit)) > 0:
		r = decimal{special: '+'}
	case x.Cmp(big.NewFloat(-expLimit)) < 0:
		r = decimalFromInt(0)
	default:
		r = decimalFromBig(bigExp(x), 0)
	}
	if neg {
		r = r.neg()
	}
	return r.value()
}

// randExpr is $rand: a double in [0, 1).
type randExpr struct{}

func parseRand(arg bsoncore.Value, _ *Scope) (Expr, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, errorf(codeExpectObject, "invalid parameter: expected an object ($rand)")
	}
	it := elemsOf(arg)
	if _, _, ok := it.next(); ok {
		return nil, errorf(codeRandArgs, "$rand does not currently accept arguments")
	}
	return randExpr{}, nil
}

func (randExpr) Eval(*Context) (bsoncore.Value, error) { return Double(rand.Float64()), nil }
