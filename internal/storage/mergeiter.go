package storage

import (
	"bytes"

	"github.com/cockroachdb/pebble/v2"
)

// mergeIter is a transaction's view of a key range: its own live writes
// (a batch-only iterator over the transaction's write set) merged with the
// snapshot it began at, minus the snapshot keys the transaction wrote or
// deleted before the iterator opened. The two inputs never hold the same
// key, so the merge needs no tie-breaking; a change of direction re-seeks
// the input that is not current.
type mergeIter struct {
	own, snap     *pebble.Iterator
	ownOK, snapOK bool
	cur           *pebble.Iterator // nil: not positioned on a key
	forward       bool
	// hidden reports whether the transaction wrote key before this
	// iterator opened (its own version, if any, comes from own).
	hidden func(key []byte) bool
}

// skip moves the snapshot input past keys the transaction wrote, in the
// current direction.
func (m *mergeIter) skip() {
	for m.snapOK && m.hidden(m.snap.Key()) {
		m.snapOK = move(m.snap, m.forward)
	}
}

func move(it *pebble.Iterator, forward bool) bool {
	if forward {
		return it.Next()
	}
	return it.Prev()
}

// pick makes the smaller (forward) or larger (backward) input current.
func (m *mergeIter) pick() bool {
	switch {
	case m.ownOK && m.snapOK:
		c := bytes.Compare(m.own.Key(), m.snap.Key())
		if c < 0 == m.forward {
			m.cur = m.own
		} else {
			m.cur = m.snap
		}
	case m.ownOK:
		m.cur = m.own
	case m.snapOK:
		m.cur = m.snap
	default:
		m.cur = nil
	}
	return m.cur != nil
}

func (m *mergeIter) First() bool {
	m.forward = true
	m.ownOK, m.snapOK = m.own.First(), m.snap.First()
	m.skip()
	return m.pick()
}

func (m *mergeIter) Last() bool {
	m.forward = false
	m.ownOK, m.snapOK = m.own.Last(), m.snap.Last()
	m.skip()
	return m.pick()
}

func (m *mergeIter) SeekGE(key []byte) bool {
	m.forward = true
	m.ownOK, m.snapOK = m.own.SeekGE(key), m.snap.SeekGE(key)
	m.skip()
	return m.pick()
}

func (m *mergeIter) SeekLT(key []byte) bool {
	m.forward = false
	m.ownOK, m.snapOK = m.own.SeekLT(key), m.snap.SeekLT(key)
	m.skip()
	return m.pick()
}

func (m *mergeIter) Next() bool { return m.step(true) }

func (m *mergeIter) Prev() bool { return m.step(false) }

// step moves one key on in direction forward. After a change of direction
// the input that is not current sits on the wrong side of the current key,
// so it is first brought just past it.
func (m *mergeIter) step(forward bool) bool {
	if m.cur == nil {
		return false
	}
	if m.forward != forward {
		m.forward = forward
		key := m.cur.Key()
		other := m.snap
		if m.cur == m.snap {
			other = m.own
		}
		var ok bool
		if forward {
			ok = other.SeekGE(key)
		} else {
			ok = other.SeekLT(key)
		}
		if other == m.snap {
			m.snapOK = ok
			m.skip()
		} else {
			m.ownOK = ok
		}
	}
	if m.cur == m.own {
		m.ownOK = move(m.own, forward)
	} else {
		m.snapOK = move(m.snap, forward)
		m.skip()
	}
	return m.pick()
}

func (m *mergeIter) Valid() bool { return m.cur != nil }

func (m *mergeIter) Key() []byte { return m.cur.Key() }

func (m *mergeIter) Value() ([]byte, error) { return m.cur.ValueAndErr() }

func (m *mergeIter) Close() error {
	err := m.own.Close()
	if err2 := m.snap.Close(); err == nil {
		err = err2
	}
	return err
}
