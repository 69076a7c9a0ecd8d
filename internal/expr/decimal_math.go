package expr

import (
	"math/big"
	"strconv"
	"strings"
)

// Transcendental functions on decimals ($sqrt $exp $ln $log $log10 $pow
// of decimal128 inputs), computed in binary floating point with far more
// precision than decimal128's 34 digits and then rounded to 34 digits.
// A result that is exact (sqrt of 4, log10 of 1000) drops its trailing
// zeros down to the operation's preferred exponent, as IEEE 754 decimal
// arithmetic does.

// mathPrec is the working precision in bits (about 90 decimal digits).
const mathPrec = 300

func newFloat() *big.Float { return new(big.Float).SetPrec(mathPrec) }

// bigFloat converts a finite decimal to a big.Float.
func (d decimal) bigFloat() *big.Float {
	f := newFloat().SetInt(d.coef)
	if d.exp > 0 {
		return f.Mul(f, newFloat().SetInt(pow10(d.exp)))
	}
	if d.exp < 0 {
		return f.Quo(f, newFloat().SetInt(pow10(-d.exp)))
	}
	return f
}

// decimalFromBig rounds f to 34 significant digits. If f is (within the
// working precision) exactly that decimal, trailing zeros are removed
// while the exponent stays at or below preferredExp.
func decimalFromBig(f *big.Float, preferredExp int) decimal {
	switch {
	case f.IsInf() && f.Sign() > 0:
		return decimal{special: '+'}
	case f.IsInf():
		return decimal{special: '-'}
	case f.Sign() == 0:
		return decimal{coef: new(big.Int), exp: min(preferredExp, 0)}
	}
	// Decide over- and underflow on the binary exponent: printing a
	// number like 2^(10^8) in decimal would take very long. decimal128
	// spans about 2^-20500 to 2^20415.
	switch e := f.MantExp(nil); {
	case e > 20500 && f.Sign() > 0:
		return decimal{special: '+'}
	case e > 20500:
		return decimal{special: '-'}
	case e < -20600:
		return decimal{coef: new(big.Int), exp: -6176}
	}
	s := f.Text('e', decimalDigits-1) // d.ddd…e±x
	mant, expStr, _ := strings.Cut(s, "e")
	e, _ := strconv.Atoi(expStr)
	if e < -6176 {
		return decimal{coef: new(big.Int), exp: -6176} // underflow to zero
	}
	neg := strings.HasPrefix(mant, "-")
	digits := strings.Replace(strings.TrimPrefix(mant, "-"), ".", "", 1)
	coef, _ := new(big.Int).SetString(digits, 10)
	exp := e - (len(digits) - 1)
	if neg {
		coef.Neg(coef)
	}
	d := decimal{coef: coef, exp: exp}
	diff := newFloat().Sub(f, d.bigFloat())
	if diff.Sign() != 0 {
		rel := newFloat().Quo(diff.Abs(diff), newFloat().Abs(f))
		if rel.Cmp(big.NewFloat(1e-70)) > 0 {
			return d
		}
	}
	q, r := new(big.Int), new(big.Int)
	for d.exp < preferredExp {
		q.QuoRem(d.coef, bigTen, r)
		if r.Sign() != 0 {
			break
		}
		d.coef, d.exp = new(big.Int).Set(q), d.exp+1
	}
	return d
}

// ln2 is log(2) at the working precision.
var ln2 = func() *big.Float {
	two := newFloat().SetInt64(2)
	return lnReduced(two)
}()

// lnReduced is log(m) by the series 2·atanh((m-1)/(m+1)), which converges
// quickly for m near 1 (callers keep m in [0.5, 2]).
func lnReduced(m *big.Float) *big.Float {
	one := newFloat().SetInt64(1)
	z := newFloat().Quo(newFloat().Sub(m, one), newFloat().Add(m, one))
	z2 := newFloat().Mul(z, z)
	sum, term := newFloat().Set(z), newFloat().Set(z)
	eps := newFloat().SetMantExp(one, -mathPrec)
	for k := int64(3); ; k += 2 {
		term.Mul(term, z2)
		t := newFloat().Quo(term, newFloat().SetInt64(k))
		sum.Add(sum, t)
		if t.Sign() == 0 || newFloat().Abs(t).Cmp(eps) < 0 {
			break
		}
	}
	return sum.Mul(sum, newFloat().SetInt64(2))
}

// bigLn is the natural logarithm of x > 0.
func bigLn(x *big.Float) *big.Float {
	m := newFloat()
	k := x.MantExp(m) // x = m × 2^k, m in [0.5, 1)
	r := lnReduced(m)
	return r.Add(r, newFloat().Mul(ln2, newFloat().SetInt64(int64(k))))
}

// bigExp is e^x; the caller keeps |x| small enough for the result to be
// representable (decimal128 overflows long before big.Float does).
func bigExp(x *big.Float) *big.Float {
	// x = k·ln2 + r with |r| <= ln2/2; e^x = e^r × 2^k.
	kf := newFloat().Quo(x, ln2)
	ki, _ := kf.Int64()
	r := newFloat().Sub(x, newFloat().Mul(ln2, newFloat().SetInt64(ki)))
	one := newFloat().SetInt64(1)
	sum, term := newFloat().Set(one), newFloat().Set(one)
	eps := newFloat().SetMantExp(one, -mathPrec)
	for n := int64(1); n < 1000; n++ {
		term.Mul(term, r)
		term.Quo(term, newFloat().SetInt64(n))
		sum.Add(sum, term)
		if term.Sign() == 0 || newFloat().Abs(term).Cmp(eps) < 0 {
			break
		}
	}
	return sum.SetMantExp(sum, int(ki))
}

// bigPowInt is x^n for an integer n by repeated squaring.
func bigPowInt(x *big.Float, n int64) *big.Float {
	neg := n < 0
	if neg {
		n = -n
	}
	result, base := newFloat().SetInt64(1), newFloat().Set(x)
	for ; n > 0; n >>= 1 {
		if n&1 == 1 {
			result.Mul(result, base)
		}
		base.Mul(base, base)
	}
	if neg {
		return newFloat().Quo(newFloat().SetInt64(1), result)
	}
	return result
}
