package wire

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// MaxDocumentDepth bounds how deeply a document may nest (the top level is
// depth 1) before it is rejected as invalid. It matches the bound of
// MongoDB's own BSON validation; it exists so that validating hostile input
// cannot exhaust the stack. The 100-level limit on stored documents is
// enforced above this package.
const MaxDocumentDepth = 200

// minDocumentSize is the empty document: a length and the terminating NUL.
const minDocumentSize = 5

// readDocument splits the document at the start of b from the bytes after it.
// The document's length must fit inside b — b is the rest of the section or
// message holding it, so a length that lies cannot reach past its container —
// and the document must be well formed.
func readDocument(b []byte) (bsoncore.Document, []byte, error) {
	n, _, ok := readInt32(b)
	if !ok {
		return nil, b, newError(ErrInvalidDocument, "document length cut short: %d bytes left", len(b))
	}
	if n < minDocumentSize || int64(n) > int64(len(b)) {
		return nil, b, newError(ErrInvalidDocument, "document claims %d bytes, %d left", n, len(b))
	}
	doc := b[:n:n] // capped, so that appending to it can never scribble on what follows
	if err := checkDocument(doc, 1, nil); err != nil {
		return nil, b, err
	}
	return doc, b[n:], nil
}

// readSplitDocument is readDocument that also appends the document's
// top-level elements to *elems as its walk finds them (a command body's
// fields, which the layers above would otherwise split again).
func readSplitDocument(b []byte, elems *[]bsoncore.Element) (bsoncore.Document, []byte, error) {
	n, _, ok := readInt32(b)
	if !ok {
		return nil, b, newError(ErrInvalidDocument, "document length cut short: %d bytes left", len(b))
	}
	if n < minDocumentSize || int64(n) > int64(len(b)) {
		return nil, b, newError(ErrInvalidDocument, "document claims %d bytes, %d left", n, len(b))
	}
	doc := b[:n:n]
	if err := checkDocument(doc, 1, elems); err != nil {
		return nil, b, err
	}
	return doc, b[n:], nil
}

// CheckDocument reports whether doc (exactly one document's bytes) is one
// the server would accept from a client: every element's type known, every
// length consistent, names terminated, nesting within MaxDocumentDepth.
// It is stricter than bsoncore's Validate; tests that fuzz what lies
// behind the wire use it as their gate.
func CheckDocument(doc []byte) error { return checkDocument(doc, 1, nil) }

// checkDocument walks doc, which is exactly one document's bytes, and
// checks that every element's type is known and every length inside it is
// consistent with the bytes that hold it. With elems, it appends each
// top-level element (type, name and value) to *elems as it goes; a
// failure leaves *elems holding some of them.
func checkDocument(doc []byte, depth int, elems *[]bsoncore.Element) error {
	if depth > MaxDocumentDepth {
		return newError(ErrInvalidDocument, "nested deeper than %d", MaxDocumentDepth)
	}
	n, _, _ := readInt32(doc)
	if len(doc) < minDocumentSize || int64(n) != int64(len(doc)) {
		return newError(ErrInvalidDocument, "document claims %d bytes, has %d", n, len(doc))
	}
	if doc[len(doc)-1] != 0 {
		return newError(ErrInvalidDocument, "document not terminated by NUL")
	}
	rest := doc[4 : len(doc)-1]
	for len(rest) > 0 {
		t := bsoncore.Type(rest[0])
		_, value, ok := cstring(rest[1:])
		if !ok {
			return newError(ErrInvalidDocument, "element name not terminated")
		}
		size, err := valueSize(t, value, depth)
		if err != nil {
			return err
		}
		if elems != nil {
			*elems = append(*elems, bsoncore.Element(rest[:len(rest)-len(value)+size]))
		}
		rest = value[size:]
	}
	return nil
}

// valueSize returns how many bytes at the start of b hold a value of type t,
// checking (and, for documents, walking) what the value contains.
func valueSize(t bsoncore.Type, b []byte, depth int) (int, error) {
	switch t {
	case bsoncore.TypeDouble, bsoncore.TypeDateTime, bsoncore.TypeTimestamp, bsoncore.TypeInt64:
		return fixedSize(t, b, 8)
	case bsoncore.TypeDecimal128:
		return fixedSize(t, b, 16)
	case bsoncore.TypeObjectID:
		return fixedSize(t, b, 12)
	case bsoncore.TypeInt32:
		return fixedSize(t, b, 4)
	case bsoncore.TypeBoolean:
		return fixedSize(t, b, 1)
	case bsoncore.TypeUndefined, bsoncore.TypeNull, bsoncore.TypeMinKey, bsoncore.TypeMaxKey:
		return 0, nil
	case bsoncore.TypeString, bsoncore.TypeJavaScript, bsoncore.TypeSymbol:
		return stringSize(b)
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		return embeddedSize(b, depth)
	case bsoncore.TypeBinary:
		return binarySize(b)
	case bsoncore.TypeRegex:
		return regexSize(b)
	case bsoncore.TypeDBPointer:
		n, err := stringSize(b)
		if err != nil {
			return 0, err
		}
		return fixedSizeAt(t, b, n, 12)
	case bsoncore.TypeCodeWithScope:
		return codeWithScopeSize(b, depth)
	}
	return 0, newError(ErrInvalidDocument, "unknown element type 0x%02x", byte(t))
}

func fixedSize(t bsoncore.Type, b []byte, n int) (int, error) {
	return fixedSizeAt(t, b, 0, n)
}

// fixedSizeAt checks that n more bytes follow the first off bytes of b.
func fixedSizeAt(t bsoncore.Type, b []byte, off, n int) (int, error) {
	if len(b)-off < n {
		return 0, newError(ErrInvalidDocument, "%v value cut short", t)
	}
	return off + n, nil
}

// stringSize checks a BSON string: an int32 length that counts the
// terminating NUL, the bytes, and that NUL.
func stringSize(b []byte) (int, error) {
	n, _, ok := readInt32(b)
	if !ok || n < 1 || int64(n) > int64(len(b)-4) {
		return 0, newError(ErrInvalidDocument, "string length %d does not fit", n)
	}
	if b[4+n-1] != 0 {
		return 0, newError(ErrInvalidDocument, "string not terminated by NUL")
	}
	return 4 + int(n), nil
}

func embeddedSize(b []byte, depth int) (int, error) {
	n, _, ok := readInt32(b)
	if !ok || n < minDocumentSize || int64(n) > int64(len(b)) {
		return 0, newError(ErrInvalidDocument, "embedded document length %d does not fit", n)
	}
	if err := checkDocument(b[:n], depth+1, nil); err != nil {
		return 0, err
	}
	return int(n), nil
}

// binarySize checks binary data: an int32 length, a subtype byte, the bytes.
func binarySize(b []byte) (int, error) {
	n, _, ok := readInt32(b)
	if !ok || n < 0 || int64(n) > int64(len(b)-5) {
		return 0, newError(ErrInvalidDocument, "binary length %d does not fit", n)
	}
	return 5 + int(n), nil
}

// regexSize checks a regular expression: pattern and options, two cstrings.
func regexSize(b []byte) (int, error) {
	_, rest, ok := cstring(b)
	if ok {
		_, rest, ok = cstring(rest)
	}
	if !ok {
		return 0, newError(ErrInvalidDocument, "regex not terminated")
	}
	return len(b) - len(rest), nil
}

// codeWithScopeSize checks JavaScript code with scope: an int32 total length,
// a string and a document, which must exactly fill the total.
func codeWithScopeSize(b []byte, depth int) (int, error) {
	total, _, ok := readInt32(b)
	if !ok || total < 4+5+minDocumentSize || int64(total) > int64(len(b)) {
		return 0, newError(ErrInvalidDocument, "code with scope length %d does not fit", total)
	}
	inner := b[4:total]
	n, err := stringSize(inner)
	if err != nil {
		return 0, err
	}
	scope := inner[n:]
	m, err := embeddedSize(scope, depth)
	if err != nil {
		return 0, err
	}
	if m != len(scope) {
		return 0, newError(ErrInvalidDocument, "code with scope length %d disagrees with its parts", total)
	}
	return int(total), nil
}
