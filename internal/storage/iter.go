package storage

import (
	"errors"

	"github.com/cockroachdb/pebble/v2"

	"github.com/cairndb/cairn/internal/invariants"
)

// Iter walks keys in order within the bounds it was opened with. Key and
// Value are valid only until the next movement.
type Iter struct {
	db *DB
	cc invariants.CloseChecker // "Closed once"; empty without the invariants tag
	it *pebble.Iterator
	m  *mergeIter   // a transaction's view instead of it (Transaction.NewIter)
	tx *Transaction // the transaction read (through m, or it alone before its first write), told at Close
}

// First moves to the first key; it reports whether there is one.
func (i *Iter) First() bool {
	if i.m != nil {
		return i.m.First()
	}
	return i.it.First()
}

// Last moves to the last key; it reports whether there is one.
func (i *Iter) Last() bool {
	if i.m != nil {
		return i.m.Last()
	}
	return i.it.Last()
}

// SeekGE moves to the first key >= key.
func (i *Iter) SeekGE(key []byte) bool {
	if i.m != nil {
		return i.m.SeekGE(key)
	}
	return i.it.SeekGE(key)
}

// SetBounds replaces the bounds of an iterator opened by DB.NewIter (the
// slices must not change until the next SetBounds or Close) and leaves it
// unpositioned; its view of the store stays the one it was opened with.
// Moving an open iterator to other bounds costs far less than opening one.
// A transaction's iterator (Transaction.NewIter) refuses.
func (i *Iter) SetBounds(lower, upper []byte) error {
	if i.m != nil || i.tx != nil {
		return errSetBoundsTxn
	}
	i.it.SetBounds(lower, upper)
	return nil
}

var errSetBoundsTxn = errors.New("storage: SetBounds on a transaction's iterator")

// SeekLT moves to the last key < key.
func (i *Iter) SeekLT(key []byte) bool {
	if i.m != nil {
		return i.m.SeekLT(key)
	}
	return i.it.SeekLT(key)
}

// Next moves forward; it reports whether a key is there.
func (i *Iter) Next() bool {
	if i.m != nil {
		return i.m.Next()
	}
	return i.it.Next()
}

// Prev moves backward; it reports whether a key is there.
func (i *Iter) Prev() bool {
	if i.m != nil {
		return i.m.Prev()
	}
	return i.it.Prev()
}

// Valid reports whether the iterator is on a key.
func (i *Iter) Valid() bool {
	if i.m != nil {
		return i.m.Valid()
	}
	return i.it.Valid()
}

// Key is the current key.
func (i *Iter) Key() []byte {
	if i.m != nil {
		return i.m.Key()
	}
	return i.it.Key()
}

// Value is the current value.
func (i *Iter) Value() ([]byte, error) {
	if i.m != nil {
		return i.m.Value()
	}
	return i.it.ValueAndErr()
}

// Close releases the iterator and reports any error met while iterating.
func (i *Iter) Close() error {
	if invariants.Enabled {
		i.cc.Close("storage.Iter")
	}
	if i.db != nil { // iterators over a request's group are not tracked
		i.db.untrack(i)
	}
	return i.release()
}

// release closes what the iterator reads from.
func (i *Iter) release() error {
	var err error
	if i.m != nil {
		err = i.m.Close()
	} else {
		err = i.it.Close()
	}
	if i.tx != nil {
		i.tx.iterClosed()
	}
	return err
}
