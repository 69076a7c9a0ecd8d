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
	register("$toString", parseFixed("$toString", 1, evalConvertTo(bsoncore.TypeString)))
	register("$toInt", parseFixed("$toInt", 1, evalConvertTo(bsoncore.TypeInt32)))
	register("$toLong", parseFixed("$toLong", 1, evalConvertTo(bsoncore.TypeInt64)))
	register("$toDouble", parseFixed("$toDouble", 1, evalConvertTo(bsoncore.TypeDouble)))
	register("$toBool", parseFixed("$toBool", 1, evalConvertTo(bsoncore.TypeBoolean)))
}

func evalType(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	return String(TypeName(vals[0])), nil
}

func formatISODate(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}
