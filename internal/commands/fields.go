package commands

import (
	"bytes"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// This file holds the one field rule (invariant "One field rule" of
// registry.go): every command's fields are checked against its declaration
// here, before its handler runs, so that a misspelled or repeated option is
// refused instead of silently doing nothing.

// checkFields refuses a field given twice (40413), a field that is neither
// one of cmd's arguments nor a generic argument (40415), and an argument
// Cairn does not honour yet (InvalidOptions). name is the command name as
// MongoDB's messages spell the path ("find.batchSzie"). It returns which
// of the first 64 elements are generic arguments (bit i for elems[i]), so
// that genericOf need not look each field up again.
func checkFields(cmd *command, name string, elems []bsoncore.Element) (genericMask uint64, err error) {
	// Keys are compared as bytes, each read once: this runs for every
	// command, and a key turned into a string would allocate. A repeat is
	// looked for only when the key's bit (keyBit, as Request.keyMask) is
	// set already: most commands' keys all have bits of their own.
	var seen map[string]struct{} // for a long command; a scan is cheaper below
	if len(elems) > 32 {
		seen = make(map[string]struct{}, len(elems))
	}
	var bits uint64
	for i, el := range elems {
		if i == 0 {
			continue // the command name is not one of its fields: given again it is unknown ("find.find")
		}
		key := keyOf(el)
		dup := false
		if seen != nil {
			_, dup = seen[string(key)]
			seen[string(key)] = struct{}{}
		} else {
			bit := keyBit(len(key), firstByte(key), lastByte(key))
			dup = bits&bit != 0 && repeats(elems[1:i], key)
			bits |= bit
		}
		if dup {
			return 0, mongoerr.New(mongoerr.DuplicateField, "BSON field '%s.%s' is a duplicate field", name, key)
		}
		if genericKind(key) != argUnknown {
			if i < 64 {
				genericMask |= 1 << i
			}
			continue
		}
		switch {
		case contains(cmd.fields, key):
		case contains(cmd.notYet, key):
			if v := valueOf(el); v.Type != bsoncore.TypeNull && !(v.Type == bsoncore.TypeBoolean && !v.Boolean()) {
				return 0, mongoerr.New(mongoerr.InvalidOptions, "BSON field '%s.%s' is not supported by Cairn yet", name, key)
			}
		case cmd.open:
		default:
			return 0, mongoerr.New(mongoerr.UnknownField, "BSON field '%s.%s' is an unknown field.", name, key)
		}
	}
	return genericMask, nil
}

// repeats reports whether key is the key of one of earlier (split by
// elementsOf).
func repeats(earlier []bsoncore.Element, key []byte) bool {
	for _, el := range earlier {
		if bytes.Equal(keyOf(el), key) {
			return true
		}
	}
	return false
}

func contains(list []string, key []byte) bool {
	for _, x := range list {
		if x == string(key) {
			return true
		}
	}
	return false
}

// checkNested applies the one field rule to the documents of cmd's nested
// fields, from the body and from OP_MSG document sequences alike.
func checkNested(cmd *command, name string, req *Request) error {
	for field, allowed := range cmd.nested {
		if v, ok := req.Arg(field); ok {
			switch v.Type {
			case bsoncore.TypeEmbeddedDocument:
				if err := checkSubFields(name+"."+field, allowed, v.Document()); err != nil {
					return err
				}
			case bsoncore.TypeArray:
				vals, _ := v.Array().Values()
				for _, el := range vals {
					if d, ok := el.DocumentOK(); ok {
						if err := checkSubFields(name+"."+field, allowed, d); err != nil {
							return err
						}
					}
				}
			}
		}
		for _, d := range req.Sequences[field] {
			if err := checkSubFields(name+"."+field, allowed, d); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkSubFields(path string, allowed []string, d bsoncore.Document) error {
	var buf [16]bsoncore.Element
	elems, err := elementsOf(buf[:0], d)
	if err != nil {
		return err
	}
	for i, el := range elems {
		key := el.KeyBytes()
		if duplicateOf(elems[:i], key) {
			return mongoerr.New(mongoerr.DuplicateField, "BSON field '%s.%s' is a duplicate field", path, key)
		}
		if !contains(allowed, key) {
			return mongoerr.New(mongoerr.UnknownField, "BSON field '%s.%s' is an unknown field.", path, key)
		}
	}
	return nil
}

// elementsOf appends doc's top-level elements to dst (a caller's array, so a
// command's handful of fields costs no allocation, where
// bsoncore.Document.Elements would grow a new slice).
func elementsOf(dst []bsoncore.Element, doc bsoncore.Document) ([]bsoncore.Element, error) {
	length, rest, ok := bsoncore.ReadLength(doc)
	if !ok || int(length) != len(doc) || len(doc) < 5 {
		return nil, mongoerr.New(mongoerr.FailedToParse, "invalid command document")
	}
	rest = rest[:len(rest)-1] // the document's terminating 0
	for len(rest) > 0 {
		el, r, ok := bsoncore.ReadElement(rest)
		if !ok {
			return nil, mongoerr.New(mongoerr.FailedToParse, "invalid command document")
		}
		dst = append(dst, el)
		rest = r
	}
	return dst, nil
}

// keyOf is el's key and valueOf its value, for an element elementsOf
// split: its bounds are checked already, so these read the key's end and
// take the rest as the value, where bsoncore's Element.KeyBytes and Value
// validate again and measure the value (a command's fields are read
// several times: Reset, checkFields, the generic arguments, the
// handler's options).
func keyOf(el bsoncore.Element) []byte {
	return el[1 : 1+bytes.IndexByte(el[1:], 0)]
}

func valueOf(el bsoncore.Element) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.Type(el[0]), Data: el[2+bytes.IndexByte(el[1:], 0):]}
}

// keyValueOf is keyOf and valueOf with one scan of the key.
func keyValueOf(el bsoncore.Element) ([]byte, bsoncore.Value) {
	n := bytes.IndexByte(el[1:], 0)
	return el[1 : 1+n], bsoncore.Value{Type: bsoncore.Type(el[0]), Data: el[2+n:]}
}

// duplicateOf reports whether key is among the earlier fields.
func duplicateOf(earlier []bsoncore.Element, key []byte) bool {
	for _, el := range earlier {
		if bytes.Equal(el.KeyBytes(), key) {
			return true
		}
	}
	return false
}

// CommandFields is one command's declaration, for the test that walks every
// accepted field (internal/server's surface test): Fields are honoured,
// NotYet are refused unless false, Open commands take any field.
type CommandFields struct {
	Fields, NotYet []string
	Nested         map[string][]string
	Open, APIV1    bool
}

// Surface returns every command's declaration by name, and the generic
// arguments with whether Cairn honours (true) or refuses (false) each.
func Surface() (map[string]CommandFields, map[string]bool) {
	cmds := make(map[string]CommandFields, len(registry))
	for n, c := range registry {
		cmds[n] = CommandFields{Fields: c.fields, NotYet: c.notYet, Nested: c.nested, Open: c.open, APIV1: c.apiV1}
	}
	generic := make(map[string]bool, len(genericArgs))
	for n, k := range genericArgs {
		generic[n] = k == argHonoured
	}
	return cmds, generic
}
