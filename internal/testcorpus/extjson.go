package testcorpus

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// EmptyDoc is the document {}.
func EmptyDoc() bsoncore.Document { return bsoncore.Document{5, 0, 0, 0, 0} }

// ParseDoc reads one extended JSON document (relaxed or canonical).
func ParseDoc(s string) (bsoncore.Document, error) {
	var raw bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(s), false, &raw); err != nil {
		return nil, err
	}
	return bsoncore.Document(raw), nil
}

// ParseDocs reads a sequence of extended JSON documents (nil for none).
func ParseDocs(s string) ([]bsoncore.Document, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	var out []bsoncore.Document
	for dec.More() {
		var m json.RawMessage
		if err := dec.Decode(&m); err != nil {
			return nil, err
		}
		d, err := ParseDoc(string(m))
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// ParseValue reads one extended JSON value of any type.
func ParseValue(s string) (bsoncore.Value, error) {
	d, err := ParseDoc(`{"v": ` + s + `}`)
	if err != nil {
		return bsoncore.Value{}, err
	}
	return d.Lookup("v"), nil
}

// ParseValues reads a JSON array of extended JSON values.
func ParseValues(s string) ([]bsoncore.Value, error) {
	v, err := ParseValue(s)
	if err != nil {
		return nil, err
	}
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, fmt.Errorf("want a JSON array")
	}
	return arr.Values()
}

// Canonical is a value's canonical extended JSON, wrapped as {"v": …}:
// equal strings mean equal types, values and field order.
func Canonical(v bsoncore.Value) string {
	d := bsoncore.NewDocumentBuilder().AppendValue("v", v).Build()
	b, err := bson.MarshalExtJSON(bson.Raw(d), true, false)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}

var (
	numberInt    = regexp.MustCompile(`\{"\$numberInt":"(-?\d+)"\}`)
	numberDouble = regexp.MustCompile(`\{"\$numberDouble":"(-?\d+\.\d+(?:E[-+]?\d+)?)"\}`)
)

// Relaxed prints a value as compact extended JSON that parses back to the
// same types: int32 and finite doubles with a fraction plainly, everything
// else canonical. Rewritten expectations are written this way.
func Relaxed(v bsoncore.Value) string {
	s := Canonical(v)
	s = strings.TrimSuffix(strings.TrimPrefix(s, `{"v":`), "}")
	s = numberInt.ReplaceAllString(s, "$1")
	s = numberDouble.ReplaceAllString(s, "$1")
	var b bytes.Buffer
	// Add a space after commas and colons between fields for readability.
	inStr := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		b.WriteByte(ch)
		switch {
		case ch == '"' && (i == 0 || s[i-1] != '\\'):
			inStr = !inStr
		case !inStr && (ch == ',' || ch == ':'):
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// RelaxedDoc is Relaxed for a document.
func RelaxedDoc(d bsoncore.Document) string {
	return Relaxed(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d})
}

// CanonicalDoc is Canonical for a document.
func CanonicalDoc(d bsoncore.Document) string {
	return Canonical(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d})
}
