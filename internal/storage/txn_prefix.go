package storage

import "bytes"

// FirstWithPrefix returns a key that starts with prefix, other than except,
// as this request sees it (the group's store and this request's own
// writes), or nil when there is none. A prepareUnique index asks it whether
// another document already holds a key.
func (t *Txn) FirstWithPrefix(prefix, except []byte) ([]byte, error) {
	for i, o := range t.ops {
		if o.kind == opSet && bytes.HasPrefix(o.key, prefix) && !bytes.Equal(o.key, except) &&
			t.latest[string(o.key)] == i && !t.rangeDeletedAfter(o.key, i) {
			return append([]byte(nil), o.key...), nil
		}
	}
	it, err := t.NewIter(prefix, PrefixEnd(prefix))
	if err != nil {
		return nil, err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if bytes.Equal(k, except) {
			continue
		}
		if _, own := t.latest[string(k)]; own {
			continue // this request wrote or deleted it: seen above if it stands
		}
		if t.rangeDeletedAfter(k, -1) {
			continue
		}
		return append([]byte(nil), k...), nil
	}
	return nil, nil
}
