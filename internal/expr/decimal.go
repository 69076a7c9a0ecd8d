package expr

import (
	"math"
	"math/big"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// decimal is a decimal128 value being computed on: coef × 10^exp exactly,
// or a special value. Results are rounded to decimal128's 34 digits, half to
// even, when they are turned back into BSON.
type decimal struct {
	special byte // 0 finite, 'n' NaN, '+' +Infinity, '-' -Infinity
	coef    *big.Int
	exp     int
}

const decimalDigits = 34

var (
	bigTen  = big.NewInt(10)
	bigZero = new(big.Int)
)

func decimalOf(v bsoncore.Value) (decimal, bool) {
	h, l, ok := v.Decimal128OK()
	if !ok {
		return decimal{}, false
	}
	d := bson.NewDecimal128(h, l)
	switch {
	case d.IsNaN():
		return decimal{special: 'n'}, true
	case d.IsInf() > 0:
		return decimal{special: '+'}, true
	case d.IsInf() < 0:
		return decimal{special: '-'}, true
	}
	coef, exp, err := d.BigInt()
	if err != nil {
		return decimal{special: 'n'}, true
	}
	return decimal{coef: coef, exp: exp}, true
}

func decimalFromInt(i int64) decimal { return decimal{coef: big.NewInt(i)} }

// decimalFromFloat converts a double as MongoDB does for arithmetic: to 15
// significant digits, so 0.1 becomes 0.100000000000000.
func decimalFromFloat(f float64) decimal {
	return decimalFromFloatDigits(f, 15)
}

func decimalFromFloatDigits(f float64, digits int) decimal {
	switch {
	case math.IsNaN(f):
		return decimal{special: 'n'}
	case math.IsInf(f, 1):
		return decimal{special: '+'}
	case math.IsInf(f, -1):
		return decimal{special: '-'}
	}
	s := strconv.FormatFloat(f, 'e', digits-1, 64)
	d, err := bson.ParseDecimal128(s)
	if err != nil {
		return decimal{special: 'n'}
	}
	coef, exp, err := d.BigInt()
	if err != nil {
		return decimal{special: 'n'}
	}
	return decimal{coef: coef, exp: exp}
}

// rounded is d rounded to decimal128's 34 digits, half to even, as each
// Decimal128 operation rounds its result.
func (d decimal) rounded() decimal {
	if d.special != 0 {
		return d
	}
	coef, exp := roundDigits(d.coef, d.exp, decimalDigits, false)
	return decimal{coef: coef, exp: exp}
}

func (d decimal) isZero() bool { return d.special == 0 && d.coef.Sign() == 0 }

func (d decimal) sign() int {
	switch d.special {
	case '+':
		return 1
	case '-':
		return -1
	case 'n':
		return 0
	}
	return d.coef.Sign()
}

// value rounds d to 34 digits and encodes it.
func (d decimal) value() bsoncore.Value {
	var dec bson.Decimal128
	switch d.special {
	case 'n':
		dec, _ = bson.ParseDecimal128("NaN")
	case '+':
		dec, _ = bson.ParseDecimal128("Infinity")
	case '-':
		dec, _ = bson.ParseDecimal128("-Infinity")
	default:
		coef, exp := roundDigits(d.coef, d.exp, decimalDigits, false)
		var ok bool
		dec, ok = bson.ParseDecimal128FromBigInt(coef, exp)
		if !ok {
			if coef.Sign() < 0 {
				dec, _ = bson.ParseDecimal128("-Infinity")
			} else {
				dec, _ = bson.ParseDecimal128("Infinity")
			}
		}
	}
	h, l := dec.GetBytes()
	return bsoncore.Value{Type: bsoncore.TypeDecimal128, Data: bsoncore.AppendDecimal128(nil, h, l)}
}

func (d decimal) float() float64 {
	switch d.special {
	case 'n':
		return math.NaN()
	case '+':
		return math.Inf(1)
	case '-':
		return math.Inf(-1)
	}
	f, _ := strconv.ParseFloat(d.coef.String()+"e"+strconv.Itoa(d.exp), 64)
	return f
}

func numDigits(x *big.Int) int {
	if x.Sign() == 0 {
		return 1
	}
	return len(new(big.Int).Abs(x).String())
}

func pow10(n int) *big.Int { return new(big.Int).Exp(bigTen, big.NewInt(int64(n)), nil) }

// roundDigits rounds coef × 10^exp to at most digits significant digits,
// half to even; sticky says the value was already above coef in magnitude
// (a nonzero remainder was dropped earlier).
func roundDigits(coef *big.Int, exp, digits int, sticky bool) (*big.Int, int) {
	n := numDigits(coef)
	if n <= digits {
		return coef, exp
	}
	drop := n - digits
	return divRound(coef, pow10(drop), roundHalfEven, sticky), exp + drop
}

type roundMode int

const (
	roundHalfEven roundMode = iota
	roundTrunc
	roundFloor
	roundCeil
)

// divRound divides coef by div (a positive power of ten) rounding as mode
// says; sticky adds an infinitesimal to the remainder's magnitude.
func divRound(coef, div *big.Int, mode roundMode, sticky bool) *big.Int {
	q, r := new(big.Int).QuoRem(coef, div, new(big.Int))
	neg := coef.Sign() < 0
	inexact := r.Sign() != 0 || sticky
	if !inexact {
		return q
	}
	up := false // away from zero
	switch mode {
	case roundTrunc:
	case roundFloor:
		up = neg
	case roundCeil:
		up = !neg
	case roundHalfEven:
		twice := new(big.Int).Abs(r)
		twice.Mul(twice, big.NewInt(2))
		switch c := twice.Cmp(div); {
		case c > 0:
			up = true
		case c == 0:
			up = sticky || q.Bit(0) == 1
		}
	}
	if up {
		if neg {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q
}

// quantize rounds d to a multiple of 10^exp.
func (d decimal) quantize(exp int, mode roundMode) decimal {
	if d.special != 0 || d.exp >= exp {
		return d
	}
	return decimal{coef: divRound(d.coef, pow10(exp-d.exp), mode, false), exp: exp}
}

func align(a, b decimal) (*big.Int, *big.Int, int) {
	switch {
	case a.exp == b.exp:
		return a.coef, b.coef, a.exp
	case a.exp > b.exp:
		return new(big.Int).Mul(a.coef, pow10(a.exp-b.exp)), b.coef, b.exp
	default:
		return a.coef, new(big.Int).Mul(b.coef, pow10(b.exp-a.exp)), a.exp
	}
}

func (d decimal) add(o decimal) decimal {
	if d.special != 0 || o.special != 0 {
		switch {
		case d.special == 'n' || o.special == 'n':
			return decimal{special: 'n'}
		case d.special != 0 && o.special != 0 && d.special != o.special:
			return decimal{special: 'n'}
		case d.special != 0:
			return d
		}
		return o
	}
	a, b, exp := align(d, o)
	return decimal{coef: new(big.Int).Add(a, b), exp: exp}
}

func (d decimal) neg() decimal {
	switch d.special {
	case '+':
		return decimal{special: '-'}
	case '-':
		return decimal{special: '+'}
	case 'n':
		return d
	}
	return decimal{coef: new(big.Int).Neg(d.coef), exp: d.exp}
}

func (d decimal) mul(o decimal) decimal {
	if d.special != 0 || o.special != 0 {
		s := d.sign() * o.sign()
		switch {
		case d.special == 'n' || o.special == 'n' || s == 0:
			return decimal{special: 'n'}
		case s > 0:
			return decimal{special: '+'}
		}
		return decimal{special: '-'}
	}
	return decimal{coef: new(big.Int).Mul(d.coef, o.coef), exp: d.exp + o.exp}
}

// div divides d by a nonzero o: exact results take the exponent closest to
// d.exp - o.exp, inexact ones 34 digits.
func (d decimal) div(o decimal) decimal {
	if d.special != 0 || o.special != 0 {
		switch {
		case d.special == 'n' || o.special == 'n' || d.special != 0 && o.special != 0:
			return decimal{special: 'n'}
		case o.special != 0:
			return decimal{coef: new(big.Int), exp: 0}
		case d.sign()*o.coef.Sign() >= 0:
			return decimal{special: '+'}
		}
		return decimal{special: '-'}
	}
	preferred := d.exp - o.exp
	shift := decimalDigits + 1 + numDigits(o.coef) - numDigits(d.coef)
	if shift < 0 {
		shift = 0
	}
	num := new(big.Int).Mul(d.coef, pow10(shift))
	q, r := new(big.Int).QuoRem(num, o.coef, new(big.Int))
	exp := preferred - shift
	if r.Sign() != 0 {
		coef, e := roundDigits(q, exp, decimalDigits, true)
		return decimal{coef: coef, exp: e}
	}
	// Exact: strip trailing zeros back toward the preferred exponent.
	for exp < preferred && q.Sign() != 0 {
		qq, rr := new(big.Int).QuoRem(q, bigTen, new(big.Int))
		if rr.Cmp(bigZero) != 0 {
			break
		}
		q, exp = qq, exp+1
	}
	if q.Sign() == 0 {
		exp = preferred
	}
	return decimal{coef: q, exp: exp}
}

// mod is the remainder of truncated division, with d's sign.
func (d decimal) mod(o decimal) decimal {
	if d.special != 0 || o.special == 'n' {
		return decimal{special: 'n'}
	}
	if o.special != 0 {
		return d
	}
	a, b, exp := align(d, o)
	return decimal{coef: new(big.Int).Rem(a, b), exp: exp}
}
