package query

import (
	"github.com/cairndb/cairn/internal/bsonx"
	"math"

	"github.com/cairndb/cairn/internal/expr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Evaluation operators: $regex (and regex values), $mod, $expr. $comment is
// accepted and ignored by parseTopOperator; $jsonSchema lives in
// jsonschema.go; $where is refused (no JavaScript).

// regexPred matches strings and symbols against a compiled pattern, and
// regex values that are the same pattern with the same options (MongoDB's
// RegexMatchExpression).
type regexPred struct {
	re      *compiledRegex
	pattern string
	flags   string
}

func (p *regexPred) matchValue(v bsoncore.Value, _ *state) bool {
	switch v.Type {
	case bsoncore.TypeString, bsoncore.TypeSymbol:
		s, ok := stringBytes(v)
		return ok && p.re.match(s)
	case bsoncore.TypeRegex:
		pat, flags, ok := v.RegexOK()
		return ok && pat == p.pattern && flags == p.flags
	}
	return false
}

// stringBytes returns the bytes of a string or symbol value without
// allocating.
func stringBytes(v bsoncore.Value) ([]byte, bool) {
	d := v.Data
	if len(d) < 5 {
		return nil, false
	}
	n := int(int32(uint32(d[0]) | uint32(d[1])<<8 | uint32(d[2])<<16 | uint32(d[3])<<24))
	if n < 1 || n > len(d)-4 {
		return nil, false
	}
	return d[4 : 4+n-1], true
}

// regexFromValue makes a predicate from a BSON regex value.
func regexFromValue(v bsoncore.Value) (*regexPred, error) {
	pat, flags, ok := v.RegexOK()
	if !ok {
		return nil, badValue("malformed regex")
	}
	return newRegexPred(pat, flags)
}

func newRegexPred(pattern, flags string) (*regexPred, error) {
	re, err := compileRegex(pattern, flags)
	if err != nil {
		return nil, err
	}
	return &regexPred{re: re, pattern: pattern, flags: flags}, nil
}

// parseRegexOperator reads $regex and $options from an operator document.
func parseRegexOperator(ops bsoncore.Value) (pred, error) {
	var pattern, flags string
	it := elemsOf(ops)
	for {
		k, v, ok := it.next()
		if !ok {
			break
		}
		switch string(k) {
		case "$regex":
			switch v.Type {
			case bsoncore.TypeString:
				pattern, _ = v.StringValueOK()
			case bsoncore.TypeRegex:
				p, f, _ := v.RegexOK()
				pattern = p
				if f != "" {
					if flags != "" {
						return nil, errorf(codeRegexOptionsBoth1, "options set in both $regex and $options")
					}
					flags = f
				}
			default:
				return nil, badValue("$regex has to be a string")
			}
		case "$options":
			if v.Type != bsoncore.TypeString {
				return nil, badValue("$options has to be a string")
			}
			if flags != "" {
				return nil, errorf(codeRegexOptionsBoth2, "options set in both $regex and $options")
			}
			flags, _ = v.StringValueOK()
		}
	}
	return newRegexPred(pattern, flags)
}

// modPred is $mod: a number whose value, truncated to an integer, has the
// given remainder (with the dividend's sign, as in C) when divided by div.
type modPred struct{ div, rem int64 }

func parseMod(v bsoncore.Value) (pred, error) {
	if v.Type != bsoncore.TypeArray {
		return nil, badValue("malformed mod, needs to be an array")
	}
	vals := arrayValues(v)
	switch {
	case len(vals) < 2:
		return nil, badValue("malformed mod, not enough elements")
	case len(vals) > 2:
		return nil, badValue("malformed mod, too many elements")
	case !isNumeric(vals[0]):
		return nil, badValue("malformed mod, divisor not a number")
	case !isNumeric(vals[1]):
		return nil, badValue("malformed mod, remainder not a number")
	}
	div, err := modArg(vals[0], "divisor")
	if err != nil {
		return nil, err
	}
	rem, err := modArg(vals[1], "remainder")
	if err != nil {
		return nil, err
	}
	if div == 0 {
		return nil, badValue("divisor cannot be 0")
	}
	return modPred{div: div, rem: rem}, nil
}

// modArg truncates a $mod argument to an integer; NaN, infinities and
// values beyond int64 are refused.
func modArg(v bsoncore.Value, what string) (int64, error) {
	f, _ := bsonx.AsFloat64(v)
	if v.Type == bsoncore.TypeInt64 {
		i, _ := v.Int64OK()
		return i, nil
	}
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return 0, badValue("malformed mod, %s value is invalid :: caused by :: Unable to coerce NaN/Inf to integral type", what)
	case f >= 0x1p63 || f < -0x1p63:
		return 0, badValue("malformed mod, %s value is invalid :: caused by :: Out of bounds coercing to integral value", what)
	}
	return int64(math.Trunc(f)), nil
}

func (p modPred) matchValue(v bsoncore.Value, _ *state) bool {
	var x int64
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		x, _ = integerValue(v)
	case bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		f, _ := bsonx.AsFloat64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) || f >= 0x1p63 || f < -0x1p63 {
			return false
		}
		x = int64(math.Trunc(f))
	default:
		return false
	}
	if p.div == -1 {
		return p.rem == 0
	}
	return x%p.div == p.rem
}

// exprMatcher is $expr: an aggregation expression evaluated against the
// document, matching when its value is truthy. It reads the variables of
// env, which Parse fixed for the whole command.
type exprMatcher struct {
	e   expr.Expr
	env *exprEnv
}

func parseExpr(v bsoncore.Value, env *exprEnv) (matcher, error) {
	e, err := expr.ParseIn(v, env.scope)
	if err != nil {
		return nil, err
	}
	return exprMatcher{e, env}, nil
}

func (m exprMatcher) match(doc []byte, st *state) bool {
	// States are pooled across filters: bind this filter's variables
	// unless the pooled context already holds them.
	if st.ctx == nil || st.env != m.env {
		st.ctx, st.env = expr.NewContext(doc), m.env
		if c, ok := m.env.coll.(expr.Collator); ok {
			st.ctx.SetCollator(c) // $expr compares strings by the filter's collation, as its other operators do
		}
		st.ctx.SetVar("NOW", m.env.now)
		for k, v := range m.env.vars {
			st.ctx.SetVar(k, v)
		}
	} else {
		st.ctx.Reset(doc)
	}
	v, err := m.e.Eval(st.ctx)
	if err != nil {
		st.fail(err)
		return false
	}
	return expr.Truthy(v)
}
