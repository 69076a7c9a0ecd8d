package query

import (
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// AppendShape writes the filter's shape to b: the filter with every value
// replaced by its type name, so that {a: 5} and {a: 7} share a shape and
// {a: null} does not. An array lists each scalar type once (MongoDB's
// query shapes write "?array<?number>": an $in of 2 or of 10,000 numbers
// is one shape); documents and arrays inside it ($or branches, $in of
// documents) keep their shapes. The planner keys its plan cache on it.
func (f *Filter) AppendShape(b *strings.Builder) { shapeDoc(b, f.raw) }

func shapeDoc(b *strings.Builder, d []byte) {
	b.WriteByte('{')
	it := elemsOfBytes(d)
	for {
		k, v, ok := it.next()
		if !ok {
			break
		}
		b.WriteString(strconv.Quote(string(k)))
		b.WriteByte(':')
		shapeValue(b, v)
		b.WriteByte(',')
	}
	b.WriteByte('}')
}

func shapeValue(b *strings.Builder, v bsoncore.Value) {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		shapeDoc(b, v.Data)
	case bsoncore.TypeArray:
		var seen [256]bool
		b.WriteByte('[')
		it := elemsOf(v)
		for {
			_, x, ok := it.next()
			if !ok {
				break
			}
			if x.Type != bsoncore.TypeEmbeddedDocument && x.Type != bsoncore.TypeArray {
				if seen[x.Type] {
					continue
				}
				seen[x.Type] = true
			}
			shapeValue(b, x)
			b.WriteByte(',')
		}
		b.WriteByte(']')
	default:
		b.WriteString(v.Type.String())
	}
}
