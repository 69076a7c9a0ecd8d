package engine

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/storage"
)

// appendIDKey appends the storage encoding of an _id value.
func appendIDKey(dst []byte, id bsoncore.Value) []byte { return keystring.Append(dst, id) }

// sameID reports whether two _id values are the same stored id, which is
// exactly keystring equality (so 1 and 1.0 are the same _id, as in MongoDB).
func sameID(a, b bsoncore.Value) bool {
	return string(appendIDKey(nil, a)) == string(appendIDKey(nil, b))
}

// Get appends the document of ns whose _id is id to dst. found is false when
// the collection or the document does not exist.
func (e *Engine) Get(dst []byte, ns Namespace, id bsoncore.Value) (doc []byte, found bool, err error) {
	coll := e.cat.Current().Collection(ns.DB, ns.Coll)
	if coll == nil {
		return dst, false, nil
	}
	var kb [64]byte
	key := storage.DocKey(kb[:0], coll.ID, appendIDKey(nil, id))
	return e.db.Get(dst, key)
}

// Scan iterates ns's documents in _id order as of now. A missing collection
// scans as empty. Close the iterator when done.
func (e *Engine) Scan(ns Namespace) (*DocIter, error) {
	coll := e.cat.Current().Collection(ns.DB, ns.Coll)
	if coll == nil {
		return &DocIter{}, nil
	}
	prefix := storage.Prefix(nil, storage.SpaceDocument, coll.ID)
	it, err := e.db.NewIter(prefix, storage.PrefixEnd(prefix))
	if err != nil {
		return nil, err
	}
	return &DocIter{it: it}, nil
}

// DocIter walks documents in _id order. Doc is valid until the next call to Next.
type DocIter struct {
	it      *storage.Iter
	started bool
	doc     bsoncore.Document
	err     error
}

// Next moves to the next document; it reports false at the end or on error.
func (d *DocIter) Next() bool {
	if d.it == nil || d.err != nil {
		return false
	}
	var ok bool
	if !d.started {
		d.started = true
		ok = d.it.First()
	} else {
		ok = d.it.Next()
	}
	if !ok {
		// Release the iterator now: a drained cursor should not pin
		// storage until someone remembers to close it.
		d.err = d.it.Close()
		d.it = nil
		return false
	}
	v, err := d.it.Value()
	if err != nil {
		d.err = fmt.Errorf("engine: reading document: %w", err)
		return false
	}
	d.doc = v
	return true
}

// Doc is the current document (aliases storage memory; copy to keep it).
func (d *DocIter) Doc() bsoncore.Document { return d.doc }

// Err reports an error met while iterating.
func (d *DocIter) Err() error { return d.err }

// Close releases the iterator and reports any iteration error.
func (d *DocIter) Close() error {
	if d.it == nil {
		return d.err
	}
	err := d.it.Close()
	d.it = nil
	if d.err != nil {
		return d.err
	}
	return err
}
