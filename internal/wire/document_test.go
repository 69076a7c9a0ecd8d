package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// everyType is a document holding a value of every BSON type.
func everyType(t *testing.T) bsoncore.Document {
	dec, err := bson.ParseDecimal128("1.5")
	if err != nil {
		t.Fatal(err)
	}
	return doc(t, bson.D{
		{Key: "double", Value: 1.5},
		{Key: "string", Value: "héllo"},
		{Key: "doc", Value: bson.D{{Key: "a", Value: int32(1)}}},
		{Key: "array", Value: bson.A{int32(1), "two", bson.A{}}},
		{Key: "binary", Value: bson.Binary{Subtype: 0, Data: []byte{1, 2, 3}}},
		{Key: "undefined", Value: bson.Undefined{}},
		{Key: "objectid", Value: bson.NewObjectID()},
		{Key: "bool", Value: true},
		{Key: "datetime", Value: bson.NewDateTimeFromTime(time.Unix(1, 0))},
		{Key: "null", Value: nil},
		{Key: "regex", Value: bson.Regex{Pattern: "^a", Options: "i"}},
		{Key: "dbpointer", Value: bson.DBPointer{DB: "db.c", Pointer: bson.NewObjectID()}},
		{Key: "javascript", Value: bson.JavaScript("x")},
		{Key: "symbol", Value: bson.Symbol("s")},
		{Key: "codewithscope", Value: bson.CodeWithScope{Code: "y", Scope: bson.D{{Key: "v", Value: int32(2)}}}},
		{Key: "int32", Value: int32(3)},
		{Key: "timestamp", Value: bson.Timestamp{T: 1, I: 2}},
		{Key: "int64", Value: int64(4)},
		{Key: "decimal", Value: dec},
		{Key: "minkey", Value: bson.MinKey{}},
		{Key: "maxkey", Value: bson.MaxKey{}},
	})
}

// nested returns {a: {a: … {}}} with depth levels in all.
func nested(depth int) []byte {
	d := []byte{5, 0, 0, 0, 0}
	for range depth - 1 {
		inner := d
		d = binary.LittleEndian.AppendUint32(nil, uint32(4+1+2+len(inner)+1))
		d = append(d, byte(bsoncore.TypeEmbeddedDocument), 'a', 0)
		d = append(d, inner...)
		d = append(d, 0)
	}
	return d
}

func TestCheckDocumentValid(t *testing.T) {
	for name, d := range map[string][]byte{
		"every type":     everyType(t),
		"empty":          {5, 0, 0, 0, 0},
		"deepest":        nested(MaxDocumentDepth),
		"driver hello":   helloMsg(t)[HeaderSize+5:],
		"insert command": insertBody(t),
	} {
		if err := checkDocument(d, 1, nil); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestCheckDocumentCorrupt(t *testing.T) {
	all := everyType(t)
	// at returns a copy of all with the bytes after name's key replaced.
	at := func(name string, patch ...byte) []byte {
		d := bytes.Clone(all)
		i := bytes.Index(d, append([]byte(name), 0)) + len(name) + 1
		copy(d[i:], patch)
		return d
	}
	typeOf := func(name string, typ byte) []byte {
		d := bytes.Clone(all)
		d[bytes.Index(d, append([]byte(name), 0))-1] = typ
		return d
	}
	tests := map[string][]byte{
		"too short":                      {4, 0, 0, 0},
		"length larger than bytes":       append(le32(6), 0, 0),
		"length smaller than bytes":      append(le32(5), 0, 0, 0, 0, 0),
		"not NUL-terminated":             {5, 0, 0, 0, 1},
		"unknown type":                   typeOf("int32", 0x20),
		"type 0 inside":                  typeOf("int32", 0x00),
		"key not terminated":             append(le32(8), 0x0A, 'a', 'b', 0),
		"string length zero":             at("string", 0, 0, 0, 0),
		"string length past end":         at("string", 0xFF, 0xFF, 0, 0),
		"string length negative":         at("string", 0xFF, 0xFF, 0xFF, 0xFF),
		"string not NUL-terminated":      at("string", 2, 0, 0, 0),
		"embedded length lies":           at("doc", 0x40, 0, 0, 0),
		"embedded length below minimum":  at("doc", 4, 0, 0, 0),
		"array element corrupt":          at("array", 0x1A, 0, 0, 0, 0x7),
		"binary length past end":         at("binary", 0xFF, 0xFF, 0, 0),
		"binary length negative":         at("binary", 0xFF, 0xFF, 0xFF, 0xFF),
		"code with scope total lies":     at("codewithscope", 0xFF, 0, 0, 0),
		"code with scope total too low":  at("codewithscope", 13, 0, 0, 0),
		"code with scope parts disagree": at("codewithscope", 0x17, 0, 0, 0),
		"dbpointer id cut short":         typeOf("maxkey", byte(bsoncore.TypeDBPointer)),
		"fixed-size value cut short":     typeOf("maxkey", byte(bsoncore.TypeDecimal128)),
		"regex not terminated":           typeOf("maxkey", byte(bsoncore.TypeRegex)),
		"too deep":                       nested(MaxDocumentDepth + 1),
	}
	for name, d := range tests {
		t.Run(name, func(t *testing.T) {
			if err := checkDocument(d, 1, nil); !errors.Is(err, ErrInvalidDocument) {
				t.Fatalf("err = %v, want ErrInvalidDocument", err)
			}
		})
	}
}
