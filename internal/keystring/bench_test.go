package keystring_test

import (
	"testing"

	"github.com/cairndb/cairn/internal/bsonx/bsonxtest"
	"github.com/cairndb/cairn/internal/keystring"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

var benchValues = []struct {
	name string
	v    bsoncore.Value
}{
	{"objectid", bsonxtest.ObjectID(42)},
	{"string", str("user:12345")},
	{"int64", i64(1234567890123)},
	{"int32-small", i32(42)},
	{"double", dbl(3.14159)},
	{"decimal", dec("123.45")},
	{"document", doc("a", i32(1), "b", str("xyz"), "c", dbl(2.5))},
}

func BenchmarkAppend(b *testing.B) {
	for _, bc := range benchValues {
		b.Run(bc.name, func(b *testing.B) {
			buf := make([]byte, 0, 64)
			b.SetBytes(int64(len(keystring.Append(nil, bc.v))))
			for b.Loop() {
				buf = keystring.Append(buf[:0], bc.v)
			}
		})
	}
}

func BenchmarkLen(b *testing.B) {
	for _, bc := range benchValues {
		k := keystring.Append(nil, bc.v)
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				_, _ = keystring.Len(k)
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, bc := range benchValues {
		k := keystring.Append(nil, bc.v)
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				_, _, _ = keystring.Decode(k)
			}
		})
	}
}

// BenchmarkTypeBits is the cost type bits add to Append for each value
// (TypeBitsWriter.Value), and of restoring them (Retype after Decode).
func BenchmarkTypeBits(b *testing.B) {
	for _, bc := range benchValues {
		b.Run("write/"+bc.name, func(b *testing.B) {
			var w keystring.TypeBitsWriter
			buf := make([]byte, 0, 32)
			for b.Loop() {
				w.Reset(buf)
				w.Value(bc.v)
				buf = w.Bytes()
			}
		})
	}
	for _, bc := range benchValues {
		k := keystring.Append(nil, bc.v)
		var w keystring.TypeBitsWriter
		w.Value(bc.v)
		tb := w.Bytes()
		b.Run("decode+retype/"+bc.name, func(b *testing.B) {
			for b.Loop() {
				v, _, _ := keystring.Decode(k)
				r := keystring.NewTypeBitsReader(tb)
				_, _ = r.Retype(v)
			}
		})
	}
}
