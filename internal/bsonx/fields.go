package bsonx

import (
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Field is one name/value pair of a document being rebuilt (by aggregation
// stages and projections). A Value of Type 0 is absent: SetField removes
// the field and BuildDoc skips it.
type Field struct {
	Name  string
	Value bsoncore.Value
}

// FieldsOf lists a document value's fields; a malformed element ends the
// list. Anything but an embedded document has none.
func FieldsOf(v bsoncore.Value) []Field {
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return nil
	}
	var out []Field
	rest, ok := elementBytes(v.Data)
	for ok && len(rest) > 0 {
		var e bsoncore.Element
		e, rest, ok = bsoncore.ReadElement(rest)
		if !ok {
			break
		}
		k, err := e.KeyErr()
		if err != nil {
			break
		}
		val, err := e.ValueErr()
		if err != nil {
			break
		}
		out = append(out, Field{k, val})
	}
	return out
}

// elementBytes returns the element bytes of a framed document or array.
func elementBytes(d []byte) ([]byte, bool) {
	l, _, ok := bsoncore.ReadLength(d)
	if !ok || l < 5 || int(l) > len(d) {
		return nil, false
	}
	return d[4 : l-1], true
}

// GetField returns the value of name in fs (Type 0 if absent).
func GetField(fs []Field, name string) bsoncore.Value {
	for _, f := range fs {
		if f.Name == name {
			return f.Value
		}
	}
	return bsoncore.Value{}
}

// SetField replaces the value of name in place, or appends it; an absent
// value (Type 0) removes the field.
func SetField(fs []Field, name string, v bsoncore.Value) []Field {
	for i, f := range fs {
		if f.Name == name {
			if v.Type == 0 {
				return append(fs[:i:i], fs[i+1:]...)
			}
			fs[i].Value = v
			return fs
		}
	}
	if v.Type == 0 {
		return fs
	}
	return append(fs, Field{name, v})
}

// BuildDoc serializes fields, skipping absent values. Names come from BSON
// keys or from checked paths, so they hold no NUL byte; one that did would
// be skipped rather than let bsoncore panic.
func BuildDoc(fs []Field) bsoncore.Document {
	idx, buf := bsoncore.AppendDocumentStart(nil)
	for _, f := range fs {
		if f.Value.Type != 0 && strings.IndexByte(f.Name, 0) < 0 {
			buf = bsoncore.AppendValueElement(buf, f.Name, f.Value)
		}
	}
	buf, _ = bsoncore.AppendDocumentEnd(buf, idx)
	return buf
}

// BuildArray serializes values as an array, skipping absent ones.
func BuildArray(vals []bsoncore.Value) bsoncore.Value {
	idx, buf := bsoncore.AppendArrayStart(nil)
	n := 0
	var key [20]byte
	for _, v := range vals {
		if v.Type == 0 {
			continue
		}
		buf = bsoncore.AppendValueElement(buf, string(strconv.AppendInt(key[:0], int64(n), 10)), v)
		n++
	}
	buf, _ = bsoncore.AppendArrayEnd(buf, idx)
	return bsoncore.Value{Type: bsoncore.TypeArray, Data: buf}
}
