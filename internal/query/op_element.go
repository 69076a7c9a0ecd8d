package query

import (
	"github.com/cairndb/cairn/internal/bsonx"
	"math"

	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Element operators: $exists and $type.

// existsPred matches any value that is there; {$exists: false} is its
// negation over the whole path.
type existsPred struct{}

func (existsPred) matchValue(v bsoncore.Value, _ *state) bool { return v.Type != 0 }

// typeSet is a set of BSON types, as $type and $jsonSchema's bsonType name
// them ("number" is every numeric type).
type typeSet struct {
	types      [256]bool
	allNumbers bool
}

func (s *typeSet) has(t bsoncore.Type) bool {
	if s.allNumbers && (t == bsoncore.TypeInt32 || t == bsoncore.TypeInt64 || t == bsoncore.TypeDouble || t == bsoncore.TypeDecimal128) {
		return true
	}
	return s.types[t]
}

// typeAliases are $type's string aliases for BSON types.
var typeAliases = map[string]bsoncore.Type{
	"double": bsoncore.TypeDouble, "string": bsoncore.TypeString, "object": bsoncore.TypeEmbeddedDocument,
	"array": bsoncore.TypeArray, "binData": bsoncore.TypeBinary, "undefined": bsoncore.TypeUndefined,
	"objectId": bsoncore.TypeObjectID, "bool": bsoncore.TypeBoolean, "date": bsoncore.TypeDateTime,
	"null": bsoncore.TypeNull, "regex": bsoncore.TypeRegex, "dbPointer": bsoncore.TypeDBPointer,
	"javascript": bsoncore.TypeJavaScript, "symbol": bsoncore.TypeSymbol,
	"javascriptWithScope": bsoncore.TypeCodeWithScope, "int": bsoncore.TypeInt32,
	"timestamp": bsoncore.TypeTimestamp, "long": bsoncore.TypeInt64, "decimal": bsoncore.TypeDecimal128,
	"minKey": bsoncore.TypeMinKey, "maxKey": bsoncore.TypeMaxKey,
}

// validTypeCode reports whether n is a BSON type number $type accepts.
func validTypeCode(n int64) bool {
	return n >= 1 && n <= 19 || n == -1 || n == 127
}

// addType adds one $type argument (an alias or a type number) to s.
func (s *typeSet) add(v bsoncore.Value, aliases map[string]bsoncore.Type) error {
	switch {
	case v.Type == bsoncore.TypeString:
		name, _ := v.StringValueOK()
		if name == "number" {
			s.allNumbers = true
			return nil
		}
		t, ok := aliases[name]
		if !ok {
			return badValue("Unknown type name alias: %s", name)
		}
		s.types[t] = true
		return nil
	case isNumeric(v):
		n, ok := integerValue(v)
		if !ok || !validTypeCode(n) {
			f, _ := bsonx.AsFloat64(v)
			return badValue("Invalid numerical type code: %v", formatNumber(f))
		}
		s.types[bsoncore.Type(byte(int8(n)))] = true
		return nil
	}
	return mongoerr.New(mongoerr.TypeMismatch, "type must be represented as a number or a string")
}

func formatNumber(f float64) any {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return int64(f)
	}
	return f
}

// parseTypeSet parses a $type argument: one alias or number, or an array
// of them.
func parseTypeSet(v bsoncore.Value, aliases map[string]bsoncore.Type, op string) (*typeSet, error) {
	s := &typeSet{}
	if v.Type != bsoncore.TypeArray {
		return s, s.add(v, aliases)
	}
	it := elemsOf(v)
	n := 0
	for {
		_, e, ok := it.next()
		if !ok {
			break
		}
		if err := s.add(e, aliases); err != nil {
			return nil, err
		}
		n++
	}
	if n == 0 {
		return nil, mongoerr.New(mongoerr.FailedToParse, "%s must match at least one type", op)
	}
	return s, nil
}

type typePred struct{ set *typeSet }

func parseType(v bsoncore.Value) (pred, error) {
	s, err := parseTypeSet(v, typeAliases, "$type")
	if err != nil {
		return nil, err
	}
	return typePred{s}, nil
}

func (p typePred) matchValue(v bsoncore.Value, _ *state) bool {
	return v.Type != 0 && p.set.has(v.Type)
}
