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
func checkFields(cmd *command, name string, elems []field) (genericMask uint64, err error) {
	// Keys are compared as bytes, each read once: this runs for every
	// command, and a key turned into a string would allocate. A repeat is
	// looked for only when the key's bit (keyBit, as Request.keyMask) is
	// set already: most commands' keys all have bits of their own.
	var seen map[string]struct{} // for a long command; a scan is cheaper below
	if len(elems) > 32 {
		seen = make(map[string]struct{}, len(elems))
	}
	var bits uint64
	for i := 1; i < len(elems); i++ { // the command name is not one of its fields: given again it is unknown ("find.find")
		f := &elems[i]
		key := f.key()
		slot := keySlot(len(key), firstByte(key), lastByte(key))
		dup := false
		if seen != nil {
			_, dup = seen[string(key)]
			seen[string(key)] = struct{}{}
		} else {
			bit := uint64(1) << slot
			dup = bits&bit != 0 && duplicateOf(elems[1:i], key)
			bits |= bit
		}
		if dup {
			return 0, mongoerr.New(mongoerr.DuplicateField, "BSON field '%s.%s' is a duplicate field", name, key)
		}
		var class fieldClass
		if cmd.table != nil {
			class = cmd.table.find(key, slot)
		} else {
			class = classify(cmd, key)
		}
		switch class {
		case classGeneric:
			if i < 64 {
				genericMask |= 1 << i
			}
		case classOwn:
		case classNotYet:
			if v := f.value(); v.Type != bsoncore.TypeNull && !(v.Type == bsoncore.TypeBoolean && !v.Boolean()) {
				return 0, mongoerr.New(mongoerr.InvalidOptions, "BSON field '%s.%s' is not supported by Cairn yet", name, key)
			}
		default:
			if !cmd.open {
				return 0, mongoerr.New(mongoerr.UnknownField, "BSON field '%s.%s' is an unknown field.", name, key)
			}
		}
	}
	return genericMask, nil
}

// fieldClass is what a key is to a command (checkFields): a generic
// argument (which wins over a declared field of the same name), one of
// its declared fields, one of its notYet fields, or none of these.
type fieldClass uint8

const (
	classUnknown fieldClass = iota
	classGeneric
	classOwn
	classNotYet
)

// classify is key's class for cmd, from genericArgs and cmd's lists: the
// definition fieldTable answers from a table (TestFieldTableMatchesClassify).
func classify(cmd *command, key []byte) fieldClass {
	switch {
	case genericKind(key) != argUnknown:
		return classGeneric
	case contains(cmd.fields, key):
		return classOwn
	case contains(cmd.notYet, key):
		return classNotYet
	}
	return classUnknown
}

// fieldTable answers classify for one registered command without hashing
// the key or scanning its lists: every name of a class other than unknown
// (the generic arguments, the declared and the notYet fields) sits in the
// slot keySlot gives it, most slots holding none or one, so a key is
// classified by comparing it with the few names of its own slot. Built
// once per command when the registry is (registry.go's init).
type fieldTable struct {
	start   [65]uint16 // slot i's names are names[start[i]:start[i+1]]
	names   []string
	classes []fieldClass
}

func newFieldTable(cmd *command) *fieldTable {
	var all []string
	for name := range genericArgs {
		all = append(all, name)
	}
	all = append(append(all, cmd.fields...), cmd.notYet...)
	slots := make([][]string, 64)
	seen := make(map[string]bool, len(all))
	for _, name := range all {
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		i := keySlot(len(name), name[0], name[len(name)-1])
		slots[i] = append(slots[i], name)
	}
	t := &fieldTable{}
	for i, names := range slots {
		t.start[i] = uint16(len(t.names))
		for _, name := range names {
			t.names = append(t.names, name)
			t.classes = append(t.classes, classify(cmd, []byte(name)))
		}
	}
	t.start[64] = uint16(len(t.names))
	return t
}

// find is classify(cmd, key) for the command whose table t is; slot is
// key's keySlot.
func (t *fieldTable) find(key []byte, slot uint) fieldClass {
	for j := t.start[slot]; j < t.start[slot+1]; j++ {
		if t.names[j] == string(key) {
			return t.classes[j]
		}
	}
	return classUnknown
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
	if len(cmd.nested) == 0 {
		return nil // most commands: no map iterator to start
	}
	for field, allowed := range cmd.nested {
		if v, ok := req.Arg(field); ok {
			switch v.Type {
			case bsoncore.TypeEmbeddedDocument:
				if err := checkSubFields(name, field, allowed, v.Document()); err != nil {
					return err
				}
			case bsoncore.TypeArray:
				// The array's elements read in place (Values would
				// allocate their slice on every write command).
				arr := v.Array()
				if len(arr) < 5 {
					break
				}
				for rest := arr[4 : len(arr)-1]; len(rest) > 0; {
					el, r, ok := bsoncore.ReadElement(rest)
					if !ok {
						break
					}
					rest = r
					if d, ok := el.Value().DocumentOK(); ok {
						if err := checkSubFields(name, field, allowed, d); err != nil {
							return err
						}
					}
				}
			}
		}
		for _, d := range req.Sequences[field] {
			if err := checkSubFields(name, field, allowed, d); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkSubFields checks the fields of d, a document of command name's
// argument arg (named name.arg in its errors).
func checkSubFields(name, arg string, allowed []string, d bsoncore.Document) error {
	var buf [16]field
	elems, err := elementsOf(buf[:0], d)
	if err != nil {
		return err
	}
	for i := range elems {
		key := elems[i].key()
		if duplicateOf(elems[:i], key) {
			return mongoerr.New(mongoerr.DuplicateField, "BSON field '%s.%s.%s' is a duplicate field", name, arg, key)
		}
		if !contains(allowed, key) {
			return mongoerr.New(mongoerr.UnknownField, "BSON field '%s.%s.%s' is an unknown field.", name, arg, key)
		}
	}
	return nil
}

// field is one of a command's top-level fields as elementsOf (or
// Request.ResetSplit) split it: the element and its key's length, found
// once, so that the dozen later reads of its key or value (Reset's $db,
// checkFields, the generic arguments, Arg, the handler's options) take
// them without scanning for the key's end again, and without bsoncore's
// Element.KeyBytes and Value, which validate the element each time.
type field struct {
	el bsoncore.Element
	kn int // the key's length: el[1:1+kn] is the key, el[2+kn:] the value
}

// fieldOf is the field of el, an element whose bounds are checked.
func fieldOf(el bsoncore.Element) field {
	return field{el: el, kn: bytes.IndexByte(el[1:], 0)}
}

func (f *field) key() []byte { return f.el[1 : 1+f.kn] }

func (f *field) value() bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.Type(f.el[0]), Data: f.el[2+f.kn:]}
}

// elementsOf appends doc's top-level fields to dst (a caller's array, so a
// command's handful of fields costs no allocation, where
// bsoncore.Document.Elements would grow a new slice).
func elementsOf(dst []field, doc bsoncore.Document) ([]field, error) {
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
		dst = append(dst, fieldOf(el))
		rest = r
	}
	return dst, nil
}

// duplicateOf reports whether key is among the earlier fields.
func duplicateOf(earlier []field, key []byte) bool {
	for i := range earlier {
		if bytes.Equal(earlier[i].key(), key) {
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
