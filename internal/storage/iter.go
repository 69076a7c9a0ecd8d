package storage

import (
	"github.com/cockroachdb/pebble/v2"

	"github.com/cairndb/cairn/internal/invariants"
)

// Iter walks keys in order within the bounds it was opened with. Key and
// Value are valid only until the next movement.
type Iter struct {
	db *DB
	cc invariants.CloseChecker // "Closed once"; empty without the invariants tag
	it *pebble.Iterator
}

// First moves to the first key; it reports whether there is one.
func (i *Iter) First() bool { return i.it.First() }

// Last moves to the last key; it reports whether there is one.
func (i *Iter) Last() bool { return i.it.Last() }

// SeekGE moves to the first key >= key.
func (i *Iter) SeekGE(key []byte) bool { return i.it.SeekGE(key) }

// Next moves forward; it reports whether a key is there.
func (i *Iter) Next() bool { return i.it.Next() }

// Prev moves backward; it reports whether a key is there.
func (i *Iter) Prev() bool { return i.it.Prev() }

// Valid reports whether the iterator is on a key.
func (i *Iter) Valid() bool { return i.it.Valid() }

// Key is the current key.
func (i *Iter) Key() []byte { return i.it.Key() }

// Value is the current value.
func (i *Iter) Value() ([]byte, error) { return i.it.ValueAndErr() }

// Close releases the iterator and reports any error met while iterating.
func (i *Iter) Close() error {
	if invariants.Enabled {
		i.cc.Close("storage.Iter")
	}
	if i.db != nil { // iterators over a request's group are not tracked
		i.db.untrack(i)
	}
	return i.it.Close()
}
