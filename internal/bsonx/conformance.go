package bsonx

import (
	"fmt"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// CheckConformance is the deeper check of validate's checkBSONConformance:
// beyond the well-formedness bsoncore.Document.Validate checks (lengths,
// terminators, known types), every field name and every string-like value
// (string, symbol, code, code with scope, regular expression, DBPointer
// namespace) is UTF-8, a regular expression's options are MongoDB's letters
// (imsux and l), each once and in sorted order, a boolean's byte is 0 or 1,
// and a UUID (binary subtypes 3 and 4) is 16 bytes. It descends into
// embedded documents, arrays and a code's scope. The error names the first
// violation and the path to it.
func CheckConformance(doc bsoncore.Document) error {
	if err := doc.Validate(); err != nil {
		return err
	}
	return conformDoc(doc, "")
}

func conformDoc(doc bsoncore.Document, path string) error {
	elems, err := doc.Elements()
	if err != nil {
		return err
	}
	for _, el := range elems {
		key := el.Key()
		p := key
		if path != "" {
			p = path + "." + key
		}
		if !utf8.ValidString(key) {
			return fmt.Errorf("field name %q at %s is not UTF-8", key, path)
		}
		if err := conformValue(el.Value(), p); err != nil {
			return err
		}
	}
	return nil
}

func conformValue(v bsoncore.Value, path string) error {
	utf := func(s, what string) error {
		if !utf8.ValidString(s) {
			return fmt.Errorf("%s at %s is not UTF-8", what, path)
		}
		return nil
	}
	switch v.Type {
	case bsoncore.TypeString:
		return utf(v.StringValue(), "string")
	case bsoncore.TypeSymbol:
		return utf(v.Symbol(), "symbol")
	case bsoncore.TypeJavaScript:
		return utf(v.JavaScript(), "code")
	case bsoncore.TypeCodeWithScope:
		code, scope := v.CodeWithScope()
		if err := utf(code, "code"); err != nil {
			return err
		}
		return conformDoc(scope, path+".$scope")
	case bsoncore.TypeRegex:
		pattern, opts := v.Regex()
		if err := utf(pattern, "regular expression"); err != nil {
			return err
		}
		return regexOptions(opts, path)
	case bsoncore.TypeDBPointer:
		ns, _ := v.DBPointer()
		return utf(ns, "DBPointer namespace")
	case bsoncore.TypeBoolean:
		if v.Data[0] > 1 {
			return fmt.Errorf("boolean at %s has byte %d (0 or 1)", path, v.Data[0])
		}
	case bsoncore.TypeBinary:
		sub, data := v.Binary()
		if (sub == 3 || sub == 4) && len(data) != 16 {
			return fmt.Errorf("UUID at %s has %d bytes (16)", path, len(data))
		}
	case bsoncore.TypeEmbeddedDocument:
		return conformDoc(v.Document(), path)
	case bsoncore.TypeArray:
		return conformDoc(bsoncore.Document(v.Array()), path)
	}
	return nil
}

// regexOptions checks a regular expression's options: MongoDB's letters,
// each once, in sorted order (as its parser writes them).
func regexOptions(opts, path string) error {
	prev := byte(0)
	for i := 0; i < len(opts); i++ {
		c := opts[i]
		switch c {
		case 'i', 'l', 'm', 's', 'u', 'x':
		default:
			return fmt.Errorf("regular expression at %s has option %q", path, c)
		}
		if c <= prev {
			return fmt.Errorf("regular expression at %s has options %q out of order or repeated", path, opts)
		}
		prev = c
	}
	return nil
}
