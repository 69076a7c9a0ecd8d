package bsonx

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func TestCheckConformance(t *testing.T) {
	bad := "a\xffb"
	doc := func(build func(b []byte) []byte) bsoncore.Document {
		i, b := bsoncore.AppendDocumentStart(nil)
		b = build(b)
		b, _ = bsoncore.AppendDocumentEnd(b, i)
		return b
	}
	sub := doc(func(b []byte) []byte { return bsoncore.AppendStringElement(b, "s", bad) })
	for _, c := range []struct {
		name  string
		doc   bsoncore.Document
		wrong string // "" when the document conforms
	}{
		{"plain values", doc(func(b []byte) []byte {
			b = bsoncore.AppendStringElement(b, "s", "héllo")
			b = bsoncore.AppendRegexElement(b, "r", "^a", "imx")
			b = bsoncore.AppendBooleanElement(b, "t", true)
			return bsoncore.AppendBinaryElement(b, "u", 4, make([]byte, 16))
		}), ""},
		{"string not UTF-8", doc(func(b []byte) []byte { return bsoncore.AppendStringElement(b, "s", bad) }), "string at s"},
		{"field name not UTF-8", doc(func(b []byte) []byte { return bsoncore.AppendInt32Element(b, bad, 1) }), "field name"},
		{"nested string", doc(func(b []byte) []byte { return bsoncore.AppendDocumentElement(b, "d", sub) }), "string at d.s"},
		{"in an array", doc(func(b []byte) []byte { return bsoncore.AppendArrayElement(b, "a", bsoncore.Array(sub)) }), "string at a.s"},
		{"symbol", doc(func(b []byte) []byte { return bsoncore.AppendSymbolElement(b, "y", bad) }), "symbol at y"},
		{"code", doc(func(b []byte) []byte { return bsoncore.AppendJavaScriptElement(b, "c", bad) }), "code at c"},
		{"code's scope", doc(func(b []byte) []byte { return bsoncore.AppendCodeWithScopeElement(b, "c", "x", sub) }), "string at c.$scope.s"},
		{"regex option unknown", doc(func(b []byte) []byte { return bsoncore.AppendRegexElement(b, "r", "a", "iz") }), "option 'z'"},
		{"regex options unsorted", doc(func(b []byte) []byte { return bsoncore.AppendRegexElement(b, "r", "a", "mi") }), "out of order"},
		{"regex option repeated", doc(func(b []byte) []byte { return bsoncore.AppendRegexElement(b, "r", "a", "ii") }), "out of order"},
		{"boolean byte", doc(func(b []byte) []byte { return append(bsoncore.AppendHeader(b, bsoncore.TypeBoolean, "t"), 2) }), "boolean at t"},
		{"short UUID", doc(func(b []byte) []byte { return bsoncore.AppendBinaryElement(b, "u", 4, make([]byte, 15)) }), "UUID at u"},
		{"old UUID subtype", doc(func(b []byte) []byte { return bsoncore.AppendBinaryElement(b, "u", 3, make([]byte, 17)) }), "UUID at u"},
		{"other binary of any length", doc(func(b []byte) []byte { return bsoncore.AppendBinaryElement(b, "b", 0, make([]byte, 15)) }), ""},
		{"malformed", bsoncore.Document{5, 0, 0, 0, 1}, "document"},
	} {
		err := CheckConformance(c.doc)
		switch {
		case c.wrong == "" && err != nil:
			t.Errorf("%s: %v, want it to conform", c.name, err)
		case c.wrong != "" && (err == nil || !strings.Contains(err.Error(), c.wrong)):
			t.Errorf("%s: %v, want an error naming %q", c.name, err, c.wrong)
		}
	}
}
