package agg

import (
	"math/big"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// decimalToInt64 converts an integral decimal128 that fits an int64.
func decimalToInt64(v bsoncore.Value) (int64, bool) {
	h, l, ok := v.Decimal128OK()
	if !ok {
		return 0, false
	}
	bi, exp, err := bson.NewDecimal128(h, l).BigInt()
	if err != nil {
		return 0, false
	}
	ten := big.NewInt(10)
	for ; exp > 0; exp-- {
		bi.Mul(bi, ten)
		if bi.BitLen() > 64 {
			return 0, false
		}
	}
	for ; exp < 0; exp++ {
		q, r := new(big.Int).QuoRem(bi, ten, new(big.Int))
		if r.Sign() != 0 {
			return 0, false
		}
		bi = q
	}
	if !bi.IsInt64() {
		return 0, false
	}
	return bi.Int64(), true
}

// isNumber reports whether v is int32, int64, double or decimal128.
func isNumber(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return true
	}
	return false
}
