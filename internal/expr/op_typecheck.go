package expr

import (
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Type and size inspection: $isNumber (int, long, double or decimal),
// $binarySize (bytes of a string or binData) and $bsonSize (bytes of a
// document's BSON encoding). The sizes give null for null or missing.

func init() {
	register("$isNumber", parseFixed("$isNumber", 1, evalIsNumber))
	register("$binarySize", parseFixed("$binarySize", 1, evalBinarySize))
	register("$bsonSize", parseFixed("$bsonSize", 1, evalBSONSize))
}

const (
	codeBinarySizeType = mongoerr.BinarySizeType
	codeBSONSizeType   = mongoerr.BSONSizeType
)

func evalIsNumber(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	return Bool(isNumber(vals[0])), nil
}

func evalBinarySize(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	v := vals[0]
	switch {
	case IsNullish(v):
		return Null, nil
	case v.Type == bsoncore.TypeString:
		s, _ := stringOf(v)
		return Int32(int32(len(s))), nil
	case v.Type == bsoncore.TypeBinary:
		_, b, ok := v.BinaryOK()
		if ok {
			return Int32(int32(len(b))), nil
		}
	}
	return Missing, errorf(codeBinarySizeType, "$binarySize requires a string or BinData argument, found: %s", TypeName(v))
}

func evalBSONSize(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	v := vals[0]
	if IsNullish(v) {
		return Null, nil
	}
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return Missing, errorf(codeBSONSizeType, "$bsonSize requires a document input, found: %s", TypeName(v))
	}
	d, _, ok := bsoncore.ReadDocument(v.Data)
	if !ok {
		return Missing, errorf(codeBSONSizeType, "$bsonSize requires a document input, found: %s", TypeName(v))
	}
	return Int32(int32(len(d))), nil
}
