package engine

import (
	"bytes"
	"fmt"
	"sort"

	"github.com/cairndb/cairn/internal/storage"
)

// CheckIndexes verifies that every secondary index of ns holds exactly the
// entries its documents produce ("Indexes follow documents"), reading one
// consistent snapshot. Tests use it after every kind of write; a repair or
// verify command can use it later.
func (e *Engine) CheckIndexes(ns Namespace) error {
	coll := e.cat.Current().Collection(ns.DB, ns.Coll)
	if coll == nil || len(coll.Indexes) == 0 {
		return nil
	}
	snap := e.db.NewSnapshot()
	defer snap.Close()
	want := map[uint64][]string{}
	docPrefix := storage.Prefix(nil, storage.SpaceDocument, coll.ID)
	it, err := snap.NewIter(docPrefix, storage.PrefixEnd(docPrefix))
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		doc, err := it.Value()
		if err != nil {
			it.Close()
			return err
		}
		idKey := it.Key()[len(docPrefix):]
		entries, _, err := e.entriesOf(coll, doc, idKey)
		if err != nil {
			it.Close()
			return err
		}
		for _, en := range entries {
			want[en.ix.ID] = append(want[en.ix.ID], string(en.key)+"\x00value="+valueOf(en, idKey))
		}
	}
	if err := it.Close(); err != nil {
		return err
	}
	for _, ix := range coll.Indexes {
		prefix := storage.Prefix(nil, storage.SpaceIndex, ix.ID)
		it, err := snap.NewIter(prefix, storage.PrefixEnd(prefix))
		if err != nil {
			return err
		}
		var got []string
		for ok := it.First(); ok; ok = it.Next() {
			v, err := it.Value()
			if err != nil {
				it.Close()
				return err
			}
			got = append(got, string(it.Key())+"\x00value="+string(v))
		}
		if err := it.Close(); err != nil {
			return err
		}
		w := want[ix.ID]
		sort.Strings(w)
		if !equalStrings(got, w) {
			return fmt.Errorf("engine: index %s of %s holds %d entries, its documents produce %d (first difference: %s)",
				ix.Name, ns, len(got), len(w), firstDifference(got, w))
		}
	}
	return nil
}

func valueOf(en indexEntry, idKey []byte) string {
	if en.spec.Unique {
		return string(idKey)
	}
	return ""
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func firstDifference(got, want []string) string {
	for i := 0; i < len(got) || i < len(want); i++ {
		switch {
		case i >= len(got):
			return fmt.Sprintf("missing %x", want[i])
		case i >= len(want):
			return fmt.Sprintf("extra %x", got[i])
		case !bytes.Equal([]byte(got[i]), []byte(want[i])):
			return fmt.Sprintf("stored %x, expected %x", got[i], want[i])
		}
	}
	return "none"
}
