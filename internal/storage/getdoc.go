package storage

import (
	"bytes"

	"github.com/cairndb/cairn/internal/invariants"
)

// GetDocument is Get of a document's key (SpaceDocument) that leaves key
// to its caller: a document-cache hit reads it in place and a miss gives
// Pebble a copy, so a caller's key built on its stack stays there (a
// point read's Engine.Get allocates nothing for it; with Get, whose key
// Pebble may keep, it escaped to the heap on every read).
func (db *DB) GetDocument(dst, key []byte) (val []byte, found bool, err error) {
	if invariants.Enabled {
		db.pipe.checkNotInRequest("GetDocument")
	}
	if c := db.visible.docs; c != nil && len(key) > 0 && key[0] == SpaceDocument {
		return db.getCached(c, dst, key) // invariant "Document cache exact"
	}
	return get(db.pdb, dst, bytes.Clone(key))
}
