package expr

import (
	"strings"
	"unicode/utf8"

	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Byte- and code-point-indexed string operators: $substrBytes (and its old
// name $substr), $strLenBytes, $indexOfBytes, $indexOfCP and $strcasecmp.
// The "Bytes" operators count UTF-8 bytes and refuse to cut a character in
// half; the "CP" operators count code points.

func init() {
	register("$substr", parseFixed("$substr", 3, evalSubstrBytes))
	register("$substrBytes", parseFixed("$substrBytes", 3, evalSubstrBytes))
	register("$strLenBytes", parseFixed("$strLenBytes", 1, evalStrLenBytes))
	register("$indexOfBytes", parseRanged("$indexOfBytes", 2, 4, evalIndexOf(false)))
	register("$indexOfCP", parseRanged("$indexOfCP", 2, 4, evalIndexOf(true)))
	register("$strcasecmp", parseFixed("$strcasecmp", 2, evalStrcasecmp))
}

const (
	codeSubstrBytesStartType = mongoerr.SubstrBytesStartType
	codeSubstrBytesLenType   = mongoerr.SubstrBytesLenType
	codeSubstrBytesStartNeg  = mongoerr.SubstrBytesStartNeg
	codeSubstrBytesStartCont = mongoerr.SubstrBytesStartCont // starting index inside a UTF-8 character
	codeSubstrBytesEndCont   = mongoerr.SubstrBytesEndCont   // ending index inside a UTF-8 character
	codeStrLenBytesType      = mongoerr.StrLenBytesType
	codeIndexOfBytesString   = mongoerr.IndexOfBytesString
	codeIndexOfBytesToken    = mongoerr.IndexOfBytesToken
	codeIndexOfCPString      = mongoerr.IndexOfCPString
	codeIndexOfCPToken       = mongoerr.IndexOfCPToken
	codeIndexNotIntegral     = mongoerr.IndexNotIntegral
	codeIndexNegative        = mongoerr.IndexNegative
)

// parseRanged parses between lo and hi arguments (28667 otherwise).
func parseRanged(op string, lo, hi int, eval func(string, []bsoncore.Value) (bsoncore.Value, error)) parser {
	return func(arg bsoncore.Value, s *Scope) (Expr, error) {
		args, err := parseArgs(arg, s)
		if err != nil {
			return nil, err
		}
		if len(args) < lo || len(args) > hi {
			return nil, errorf(codeRangeArgCount, "Expression %s takes at least %d arguments, and at most %d, but %d were passed in.", op, lo, hi, len(args))
		}
		return naryExpr{op: op, args: args, eval: eval}, nil
	}
}

func isContinuationByte(c byte) bool { return c&0xC0 == 0x80 }

// evalSubstrBytes: the string is coerced (null is ""), a negative length
// means "to the end", a start past the end gives "".
func evalSubstrBytes(op string, vals []bsoncore.Value) (bsoncore.Value, error) {
	s, err := coerceToString(op, vals[0])
	if err != nil {
		return Missing, err
	}
	start, ok := numberOf(vals[1])
	if !ok {
		return Missing, errorf(codeSubstrBytesStartType, "%s:  starting index must be a numeric type (is BSON type %s)", op, TypeName(vals[1]))
	}
	length, ok := numberOf(vals[2])
	if !ok {
		return Missing, errorf(codeSubstrBytesLenType, "%s:  length must be a numeric type (is BSON type %s)", op, TypeName(vals[2]))
	}
	lo, n := start.truncInt64(), length.truncInt64()
	if lo < 0 {
		return Missing, errorf(codeSubstrBytesStartNeg, "%s:  starting index must be non-negative (got: %d)", op, lo)
	}
	if lo < int64(len(s)) && isContinuationByte(s[lo]) {
		return Missing, errorf(codeSubstrBytesStartCont, "%s:  Invalid range, starting index is a UTF-8 continuation byte.", op)
	}
	if lo >= int64(len(s)) {
		return String(""), nil
	}
	hi := int64(len(s))
	if n >= 0 && n < hi-lo {
		hi = lo + n
	}
	if hi < int64(len(s)) && isContinuationByte(s[hi]) {
		return Missing, errorf(codeSubstrBytesEndCont, "%s:  Invalid range, ending index is in the middle of a UTF-8 character.", op)
	}
	return String(s[lo:hi]), nil
}

// truncInt64 is MongoDB's coerceToLong: toward zero, saturating.
func (n number) truncInt64() int64 {
	if n.t == bsoncore.TypeInt32 || n.t == bsoncore.TypeInt64 {
		return n.i
	}
	f := n.float()
	switch {
	case f != f:
		return 0
	case f >= 0x1p63:
		return 1<<63 - 1
	case f < -0x1p63:
		return -1 << 63
	}
	return int64(f)
}

func evalStrLenBytes(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	s, ok := stringOf(vals[0])
	if !ok {
		return Missing, errorf(codeStrLenBytesType, "$strLenBytes requires a string argument, found: %s", TypeName(vals[0]))
	}
	return Int32(int32(len(s))), nil
}

// indexArg reads an optional start or end index: integral (an integral
// double counts) and non-negative.
func indexArg(op, what string, v bsoncore.Value) (int, error) {
	i, numeric, integral := int32Arg(v)
	if !numeric || !integral {
		return 0, errorf(codeIndexNotIntegral, "%s requires an integral %s, found a value of type: %s, with value: %s", op, what, TypeName(v), v)
	}
	if i < 0 {
		return 0, errorf(codeIndexNegative, "%s requires a nonnegative %s, found: %d", op, what, i)
	}
	return int(i), nil
}

// evalIndexOf is $indexOfBytes (cp false) and $indexOfCP (cp true): the
// first position at or after start where the substring is found, or -1.
// $indexOfBytes searches only the first end bytes; $indexOfCP only
// requires the match to start before end (see indexOfCP). A null or
// missing string gives null.
func evalIndexOf(cp bool) func(string, []bsoncore.Value) (bsoncore.Value, error) {
	return func(op string, vals []bsoncore.Value) (bsoncore.Value, error) {
		codeStr, codeTok := codeIndexOfBytesString, codeIndexOfBytesToken
		if cp {
			codeStr, codeTok = codeIndexOfCPString, codeIndexOfCPToken
		}
		if IsNullish(vals[0]) {
			return Null, nil
		}
		s, ok := stringOf(vals[0])
		if !ok {
			return Missing, errorf(codeStr, "%s requires a string as the first argument, found: %s", op, TypeName(vals[0]))
		}
		tok, ok := stringOf(vals[1])
		if !ok {
			return Missing, errorf(codeTok, "%s requires a string as the second argument, found: %s", op, TypeName(vals[1]))
		}
		length := len(s)
		if cp {
			length = utf8.RuneCountInString(s)
		}
		start, end := 0, length
		var err error
		if len(vals) > 2 {
			if start, err = indexArg(op, "starting index", vals[2]); err != nil {
				return Missing, err
			}
		}
		if len(vals) > 3 {
			if end, err = indexArg(op, "ending index", vals[3]); err != nil {
				return Missing, err
			}
			end = min(end, length)
		}
		if start > length || end < start {
			return Int32(-1), nil
		}
		if !cp {
			pos := strings.Index(s[start:end], tok)
			if pos < 0 || start+pos+len(tok) > end {
				return Int32(-1), nil
			}
			return Int32(int32(start + pos)), nil
		}
		return Int32(int32(indexOfCP(s, tok, start, end))), nil
	}
}

// indexOfCP is $indexOfCP's search, as MongoDB does it: the substring
// must start at a code point in [start, end) but may extend past end, and
// an empty substring is found at start only if start < end (or both
// strings are empty).
func indexOfCP(s, tok string, start, end int) int {
	if s == "" && tok == "" && start == 0 {
		return 0
	}
	p, byteIx := 0, 0
	for ; p < start && byteIx < len(s); p++ {
		_, size := utf8.DecodeRuneInString(s[byteIx:])
		byteIx += size
	}
	for ; p < end && byteIx <= len(s); p++ {
		if strings.HasPrefix(s[byteIx:], tok) {
			return p
		}
		_, size := utf8.DecodeRuneInString(s[byteIx:])
		byteIx += max(size, 1)
	}
	return -1
}

// evalStrcasecmp compares two strings (coerced: null is "") ignoring the
// case of ASCII letters, giving -1, 0 or 1. Like MongoDB it compares the
// upper-cased strings, so "_" sorts after "a" (0x5F > 'A').
func evalStrcasecmp(op string, vals []bsoncore.Value) (bsoncore.Value, error) {
	a, err := coerceToString(op, vals[0])
	if err != nil {
		return Missing, err
	}
	b, err := coerceToString(op, vals[1])
	if err != nil {
		return Missing, err
	}
	return Int32(int32(strings.Compare(asciiMap(a, strings.ToUpper), asciiMap(b, strings.ToUpper)))), nil
}
