package expr

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Type operators: $type and the conversions $toString $toInt $toLong
// $toDouble $toBool, which follow $convert's table (op_convert.go): null or
// missing give null, and values they cannot convert fail with
// ConversionFailure (241).

func init() {
	register("$type", parseFixed("$type", 1, evalType))
	register("$toString", parseConvertShorthand("$toString", bsoncore.TypeString))
	register("$toInt", parseConvertShorthand("$toInt", bsoncore.TypeInt32))
	register("$toLong", parseConvertShorthand("$toLong", bsoncore.TypeInt64))
	register("$toDouble", parseConvertShorthand("$toDouble", bsoncore.TypeDouble))
	register("$toBool", parseConvertShorthand("$toBool", bsoncore.TypeBoolean))
}

func evalType(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	return String(TypeName(vals[0])), nil
}

func formatISODate(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}
