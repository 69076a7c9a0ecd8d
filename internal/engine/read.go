package engine

import (
	"slices"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/storage"
)

// appendIDKey appends the storage encoding of an _id value.
func appendIDKey(dst []byte, id bsoncore.Value) []byte { return keystring.Append(dst, id) }

// sameID reports whether two _id values are the same stored id, which is
// exactly keystring equality (so 1 and 1.0 are the same _id, as in MongoDB).
func sameID(a, b bsoncore.Value) bool {
	if a.Type == b.Type && string(a.Data) == string(b.Data) {
		return true // the same bytes: the same key, without encoding either
	}
	return string(appendIDKey(nil, a)) == string(appendIDKey(nil, b))
}

// Get appends the document of ns whose _id is id to dst. found is false when
// the collection or the document does not exist.
func (e *Engine) Get(dst []byte, ns Namespace, id bsoncore.Value) (doc []byte, found bool, err error) {
	coll := e.cat.Current().Collection(ns.DB, ns.Coll)
	if coll == nil {
		return dst, false, nil
	}
	// The id is encoded straight after the key's prefix, in a buffer that
	// stays on the stack (DocKey of an encoded id would allocate the
	// encoding): keystring.AppendScalar and storage's GetDocument leave it
	// there; an _id that is a document or an array (whose encoding
	// recurses, which escape analysis sends to the heap) is encoded into
	// a heap buffer of its own.
	var kb [64]byte
	key, ok := keystring.AppendScalar(storage.Prefix(kb[:0], storage.SpaceDocument, coll.ID), id)
	if !ok {
		key = appendIDKey(slices.Clone(key), id)
	}
	return e.db.GetDocument(dst, key)
}
