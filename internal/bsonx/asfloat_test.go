package bsonx

import (
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func TestAsFloat64(t *testing.T) {
	dec := func(s string) bsoncore.Value {
		d, err := bson.ParseDecimal128(s)
		if err != nil {
			t.Fatal(err)
		}
		h, l := d.GetBytes()
		return bsoncore.Value{Type: bsoncore.TypeDecimal128, Data: bsoncore.AppendDecimal128(nil, h, l)}
	}
	cases := []struct {
		v    bsoncore.Value
		want float64
		ok   bool
	}{
		{bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, -7)}, -7, true},
		{bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, 1<<53)}, 1 << 53, true},
		{bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, 2.5)}, 2.5, true},
		{dec("1.5E+3"), 1500, true},
		{dec("0.1"), 0.1, true},
		{dec("1E+400"), math.Inf(1), true},
		{dec("-1E+400"), math.Inf(-1), true},
		{dec("1E-400"), 0, true}, // underflows to zero, not NaN
		{dec("Infinity"), math.Inf(1), true},
		{bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, "1")}, 0, false},
	}
	for _, c := range cases {
		got, ok := AsFloat64(c.v)
		if ok != c.ok || got != c.want {
			t.Errorf("AsFloat64(%s) = %v, %v; want %v, %v", c.v, got, ok, c.want, c.ok)
		}
	}
	if got, ok := AsFloat64(dec("NaN")); !ok || !math.IsNaN(got) {
		t.Errorf("AsFloat64(NaN) = %v, %v", got, ok)
	}
}
