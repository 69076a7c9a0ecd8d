package query

import (
	"github.com/cairndb/cairn/internal/bsonx"
	"math"

	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Bitwise operators: $bitsAllSet $bitsAnySet $bitsAllClear $bitsAnyClear.
// The argument names bit positions as an array of positions, a
// non-negative integer bitmask, or a binData bitmask. Numbers are tested as
// 64-bit two's complement integers (a negative number has every bit above
// 63 set) and only when they are integral; binData is tested as a little
// endian bit string (bit p is bit p%8 of byte p/8), zero past its end.

type bitsOp int

const (
	bitsAllSet bitsOp = iota
	bitsAnySet
	bitsAllClear
	bitsAnyClear
)

var bitsOps = map[string]bitsOp{
	"$bitsAllSet": bitsAllSet, "$bitsAnySet": bitsAnySet,
	"$bitsAllClear": bitsAllClear, "$bitsAnyClear": bitsAnyClear,
}

type bitsPred struct {
	op        bitsOp
	positions []uint32
}

func parseBits(op string, v bsoncore.Value) (pred, error) {
	p := bitsPred{op: bitsOps[op]}
	switch {
	case v.Type == bsoncore.TypeArray:
		for _, e := range arrayValues(v) {
			pos, err := bitPosition(e)
			if err != nil {
				return nil, err
			}
			p.positions = append(p.positions, pos)
		}
	case isNumeric(v):
		mask, err := integerArg(v)
		if err != nil {
			return nil, err
		}
		if mask < 0 {
			return nil, mongoerr.New(mongoerr.FailedToParse, "Expected a positive number in: %s: %s", op, v)
		}
		for i := uint32(0); i < 63; i++ {
			if mask&(1<<i) != 0 {
				p.positions = append(p.positions, i)
			}
		}
	case v.Type == bsoncore.TypeBinary:
		_, data, _ := v.BinaryOK()
		for i, b := range data {
			for j := uint32(0); j < 8; j++ {
				if b&(1<<j) != 0 {
					p.positions = append(p.positions, uint32(i)*8+j)
				}
			}
		}
	default:
		return nil, badValue("%s takes an Array, a number, or a BinData but received: %s: %s", op, op, v)
	}
	return p, nil
}

func bitPosition(e bsoncore.Value) (uint32, error) {
	if !isNumeric(e) {
		return 0, badValue("bit positions must be an integer but got: %s", e)
	}
	f, _ := bsonx.AsFloat64(e)
	switch {
	case math.IsNaN(f):
		return 0, badValue("bit positions cannot take a NaN: %s", e)
	case f > math.MaxInt32 || f < math.MinInt32:
		return 0, badValue("bit positions cannot be represented as a 32-bit signed integer: %s", e)
	case f != math.Trunc(f):
		return 0, badValue("bit positions must be an integer but got: %s", e)
	case f < 0:
		return 0, badValue("bit positions must be >= 0 but got: %s", e)
	}
	return uint32(f), nil
}

func (p bitsPred) matchValue(v bsoncore.Value, _ *state) bool {
	var bit func(uint32) bool
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		x, ok := integerValue(v)
		if !ok {
			return false
		}
		bit = func(pos uint32) bool {
			if pos >= 64 {
				return x < 0
			}
			return x&(1<<pos) != 0
		}
	case bsoncore.TypeBinary:
		_, data, ok := v.BinaryOK()
		if !ok {
			return false
		}
		bit = func(pos uint32) bool {
			i := int(pos / 8)
			return i < len(data) && data[i]&(1<<(pos%8)) != 0
		}
	default:
		return false
	}
	for _, pos := range p.positions {
		set := bit(pos)
		switch p.op {
		case bitsAllSet:
			if !set {
				return false
			}
		case bitsAnySet:
			if set {
				return true
			}
		case bitsAllClear:
			if set {
				return false
			}
		case bitsAnyClear:
			if !set {
				return true
			}
		}
	}
	return p.op == bitsAllSet || p.op == bitsAllClear
}
