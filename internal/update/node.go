package update

import (
	"bytes"
	"encoding/binary"
	"strconv"

	"github.com/cairndb/cairn/internal/bsonx"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// node is one value of a document being rewritten: the package's small
// mutable document model. A node starts "closed", holding its value's raw
// bytes (aliasing the stored document or the update), and is "opened" only
// when an update must look inside it: opening a document or array decodes
// its direct children, each again a closed node. So an update that touches
// one field of a large document decodes the top level and that field's
// ancestors, nothing else, and serializing copies every untouched value's
// bytes as they were.
type node struct {
	t    bsoncore.Type
	data []byte // the value's bytes as in BSON; meaningful while !open
	open bool   // kids holds the children of a document or array
	kids []kid
}

// kid is a field of a document node, or an element of an array node (whose
// names are not kept: they are rewritten as "0", "1", … on serialization).
type kid struct {
	name []byte
	n    *node
}

func newNode(v bsoncore.Value) *node { return &node{t: v.Type, data: v.Data} }

func nullNode() *node { return &node{t: bsoncore.TypeNull} }

func emptyDocNode() *node { return &node{t: bsoncore.TypeEmbeddedDocument, open: true} }

func emptyArrayNode() *node { return &node{t: bsoncore.TypeArray, open: true} }

func (n *node) isDoc() bool   { return n.t == bsoncore.TypeEmbeddedDocument }
func (n *node) isArray() bool { return n.t == bsoncore.TypeArray }

// isContainer reports whether n holds fields or elements an update path can
// reach.
func (n *node) isContainer() bool { return n.isDoc() || n.isArray() }

// rootNode reads a stored document. It checks the document's framing; the
// elements are read as they are opened.
func rootNode(doc bsoncore.Document) (*node, error) {
	n, ok := bsonx.ValueSize(bsoncore.TypeEmbeddedDocument, doc)
	if !ok || n != len(doc) {
		return nil, errorf(codeInvalidBSON, "update: the document to update is not valid BSON")
	}
	return &node{t: bsoncore.TypeEmbeddedDocument, data: doc}, nil
}

// expand opens a closed document or array node. A malformed element is an
// error (codeInvalidBSON), never a panic.
func (n *node) expand() error {
	if n.open || !n.isContainer() {
		return nil
	}
	if len(n.data) < 5 {
		return errorf(codeInvalidBSON, "update: malformed document")
	}
	elems := n.data[4 : len(n.data)-1]
	count := 0
	for rest := elems; len(rest) > 0; count++ {
		_, _, _, r, ok := bsonx.NextElement(rest)
		if !ok {
			return errorf(codeInvalidBSON, "update: malformed document")
		}
		rest = r
	}
	slab := make([]node, count)
	kids := make([]kid, 0, count)
	for i := 0; len(elems) > 0; i++ {
		t, key, val, rest, _ := bsonx.NextElement(elems)
		slab[i] = node{t: t, data: val}
		kids = append(kids, kid{name: key, n: &slab[i]})
		elems = rest
	}
	n.kids, n.open, n.data = kids, true, nil
	return nil
}

// value returns n as a bsoncore.Value, serializing it if it is open.
func (n *node) value() bsoncore.Value {
	if !n.open {
		return bsoncore.Value{Type: n.t, Data: n.data}
	}
	return bsoncore.Value{Type: n.t, Data: n.appendValue(nil)}
}

// appendValue appends n's value bytes (no type, no name) to dst.
func (n *node) appendValue(dst []byte) []byte {
	if !n.open {
		return append(dst, n.data...)
	}
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	for i, k := range n.kids {
		dst = append(dst, byte(k.n.t))
		if n.isArray() {
			dst = strconv.AppendInt(dst, int64(i), 10)
		} else {
			dst = append(dst, k.name...)
		}
		dst = append(dst, 0)
		dst = k.n.appendValue(dst)
	}
	dst = append(dst, 0)
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(dst)-start))
	return dst
}

// set replaces n's value with v (which n then aliases).
func (n *node) set(v bsoncore.Value) {
	n.t, n.data, n.open, n.kids = v.Type, v.Data, false, nil
}

// field returns the index and node of the first field of document n named
// name, or -1, nil. n must be open.
func (n *node) field(name string) (int, *node) {
	for i, k := range n.kids {
		if string(k.name) == name {
			return i, k.n
		}
	}
	return -1, nil
}

// child is the child of n that the path component part names: a field of a
// document, or an element of an array when part is an index. It opens n.
// A scalar has no children.
func (n *node) child(part string) (*node, error) {
	switch {
	case n.isDoc():
		if err := n.expand(); err != nil {
			return nil, err
		}
		_, c := n.field(part)
		return c, nil
	case n.isArray():
		idx, ok := arrayIndex(part)
		if !ok {
			return nil, nil
		}
		if err := n.expand(); err != nil {
			return nil, err
		}
		if idx < len(n.kids) {
			return n.kids[idx].n, nil
		}
	}
	return nil, nil
}

// appendField adds a field at the end of open document n.
func (n *node) appendField(name string, c *node) {
	n.kids = append(n.kids, kid{name: []byte(name), n: c})
}

// removeKid deletes the child c of open container n.
func (n *node) removeKid(c *node) {
	for i, k := range n.kids {
		if k.n == c {
			n.kids = append(n.kids[:i], n.kids[i+1:]...)
			return
		}
	}
}

// sameBytes reports whether two values are identical byte for byte, type
// included: MongoDB's binaryEqualValues, which decides $set's no-ops.
func sameBytes(a, b bsoncore.Value) bool {
	return a.Type == b.Type && bytes.Equal(a.Data, b.Data)
}

// docValue wraps a document as a value.
func docValue(d []byte) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}
}

// wrap builds the one-field document {name: v}, to match a value against a
// filter written for a field (array filters, $pull conditions).
func wrap(dst []byte, name string, v bsoncore.Value) bsoncore.Document {
	dst = append(dst[:0], 0, 0, 0, 0, byte(v.Type))
	dst = append(dst, name...)
	dst = append(dst, 0)
	dst = append(dst, v.Data...)
	dst = append(dst, 0)
	binary.LittleEndian.PutUint32(dst, uint32(len(dst)))
	return dst
}

// arrayLen counts the elements of a closed array without decoding them;
// ok is false if the array is malformed.
func (n *node) arrayLen() (int, bool) {
	if len(n.data) < 5 {
		return 0, false
	}
	count := 0
	for rest := n.data[4 : len(n.data)-1]; len(rest) > 0; count++ {
		_, _, _, r, ok := bsonx.NextElement(rest)
		if !ok {
			return 0, false
		}
		rest = r
	}
	return count, true
}

// appendClosed appends values to the closed array n, whose length is
// size, by rewriting its bytes: the fast path of $push and $addToSet,
// which would otherwise open an array of any length to add to its end.
func (n *node) appendClosed(size int, vals []bsoncore.Value) {
	out := make([]byte, 0, len(n.data)+len(vals)*16)
	out = append(out, n.data[:len(n.data)-1]...)
	for i, v := range vals {
		out = append(out, byte(v.Type))
		out = strconv.AppendInt(out, int64(size+i), 10)
		out = append(out, 0)
		out = append(out, v.Data...)
	}
	out = append(out, 0)
	binary.LittleEndian.PutUint32(out, uint32(len(out)))
	n.data = out
}
