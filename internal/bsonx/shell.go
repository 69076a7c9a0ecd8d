package bsonx

import (
	"encoding/hex"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// ShellString formats a document as MongoDB's BSONObj::toString does, the
// form its error messages quote values in (the duplicate-key message's
// "dup key: { _id: 1 }"): unquoted field names, strings in double quotes,
// ObjectId('…'), new Date(ms), and doubles that always show a decimal point.
func ShellString(d bsoncore.Document) string {
	var b strings.Builder
	appendShellDoc(&b, d, false)
	return b.String()
}

func appendShellDoc(b *strings.Builder, d bsoncore.Document, array bool) {
	elems, err := d.Elements()
	if err != nil {
		b.WriteString("<invalid BSON>")
		return
	}
	open, end := "{", "}"
	if array {
		open, end = "[", "]"
	}
	if len(elems) == 0 {
		b.WriteString(open + end)
		return
	}
	b.WriteString(open + " ")
	for i, e := range elems {
		if i > 0 {
			b.WriteString(", ")
		}
		if !array {
			b.WriteString(e.Key())
			b.WriteString(": ")
		}
		appendShellValue(b, e.Value())
	}
	b.WriteString(" " + end)
}

func appendShellValue(b *strings.Builder, v bsoncore.Value) {
	switch v.Type {
	case bsoncore.TypeInt32:
		b.WriteString(strconv.FormatInt(int64(v.Int32()), 10))
	case bsoncore.TypeInt64:
		b.WriteString(strconv.FormatInt(v.Int64(), 10))
	case bsoncore.TypeDouble:
		s := strconv.FormatFloat(v.Double(), 'g', -1, 64)
		if !strings.ContainsAny(s, ".eIN") {
			s += ".0"
		}
		b.WriteString(s)
	case bsoncore.TypeDecimal128:
		h, l := v.Decimal128()
		b.WriteString(`NumberDecimal("` + bson.NewDecimal128(h, l).String() + `")`)
	case bsoncore.TypeString:
		b.WriteString(strconv.Quote(v.StringValue()))
	case bsoncore.TypeSymbol:
		b.WriteString(strconv.Quote(v.Symbol()))
	case bsoncore.TypeEmbeddedDocument:
		appendShellDoc(b, v.Document(), false)
	case bsoncore.TypeArray:
		appendShellDoc(b, bsoncore.Document(v.Array()), true)
	case bsoncore.TypeObjectID:
		oid := v.ObjectID()
		b.WriteString("ObjectId('" + hex.EncodeToString(oid[:]) + "')")
	case bsoncore.TypeBoolean:
		b.WriteString(strconv.FormatBool(v.Boolean()))
	case bsoncore.TypeDateTime:
		b.WriteString("new Date(" + strconv.FormatInt(v.DateTime(), 10) + ")")
	case bsoncore.TypeNull:
		b.WriteString("null")
	case bsoncore.TypeUndefined:
		b.WriteString("undefined")
	case bsoncore.TypeMinKey:
		b.WriteString("MinKey")
	case bsoncore.TypeMaxKey:
		b.WriteString("MaxKey")
	case bsoncore.TypeTimestamp:
		t, i := v.Timestamp()
		b.WriteString("Timestamp(" + strconv.FormatUint(uint64(t), 10) + ", " + strconv.FormatUint(uint64(i), 10) + ")")
	case bsoncore.TypeBinary:
		sub, data := v.Binary()
		b.WriteString("BinData(" + strconv.Itoa(int(sub)) + ", " + strings.ToUpper(hex.EncodeToString(data)) + ")")
	case bsoncore.TypeRegex:
		p, o := v.Regex()
		b.WriteString("/" + p + "/" + o)
	default:
		b.WriteString(v.String())
	}
}
