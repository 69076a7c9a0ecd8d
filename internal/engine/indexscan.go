package engine

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/storage"
)

// IndexScan reads the documents whose entries in one index fall in
// [Lower, Upper] (keys without the index prefix; nil means unbounded), each
// document once, from one snapshot, in index order.
type IndexScan struct {
	snap   *storage.Snapshot
	it     *storage.Iter
	coll   *catalog.Collection
	spec   *index.Spec
	prefix []byte
	seen   map[string]bool // multikey: a document has several entries
	doc    []byte
	keys   int // entries examined, for explain
	err    error
}

// ScanIndex opens a scan of index ixName of ns between lower and upper
// (inclusive prefixes of encoded keys). It returns nil when the collection
// or index does not exist.
func (e *Engine) ScanIndex(ns Namespace, ixName string, lower, upper []byte) (*IndexScan, error) {
	coll := e.cat.Current().Collection(ns.DB, ns.Coll)
	if coll == nil {
		return nil, nil
	}
	ix := coll.Index(ixName)
	if ix == nil || ix.Building {
		return nil, nil // a building index is incomplete: not for reading yet
	}
	e.recordIndexAccess(ix)
	spec, err := e.specs.get(*ix)
	if err != nil {
		return nil, err
	}
	prefix := storage.Prefix(nil, storage.SpaceIndex, ix.ID)
	lo := append(append([]byte(nil), prefix...), lower...)
	var hi []byte
	if upper == nil {
		hi = storage.PrefixEnd(prefix)
	} else {
		hi = storage.PrefixEnd(append(append([]byte(nil), prefix...), upper...))
	}
	snap := e.db.NewSnapshot()
	it, err := snap.NewIter(lo, hi)
	if err != nil {
		snap.Close()
		return nil, err
	}
	return &IndexScan{snap: snap, it: it, coll: coll, spec: spec, prefix: prefix, seen: map[string]bool{}}, nil
}

// Next returns the next document, or nil at the end (see Err). The
// document is valid until the next call.
func (s *IndexScan) Next() bsoncore.Document {
	for s.err == nil {
		var ok bool
		if s.keys == 0 {
			ok = s.it.First()
		} else {
			ok = s.it.Next()
		}
		if !ok {
			return nil
		}
		s.keys++
		idKey, err := s.idKey()
		if err != nil {
			s.err = err
			return nil
		}
		if s.seen[string(idKey)] {
			continue
		}
		s.seen[string(idKey)] = true
		var found bool
		s.doc, found, s.err = s.snap.Get(s.doc[:0], storage.DocKey(nil, s.coll.ID, idKey))
		if found && s.err == nil {
			return s.doc
		}
	}
	return nil
}

// idKey extracts the encoded _id of the current entry: the value of a
// unique index, the key's tail otherwise.
func (s *IndexScan) idKey() ([]byte, error) {
	if s.spec.Unique {
		v, err := s.it.Value()
		return append([]byte(nil), v...), err
	}
	rest := s.it.Key()[len(s.prefix):]
	for range s.spec.KeyParts() {
		n, err := keystring.Len(rest)
		if err != nil {
			return nil, err
		}
		rest = rest[n:]
	}
	return append([]byte(nil), rest...), nil
}

// KeysExamined counts the index entries read so far.
func (s *IndexScan) KeysExamined() int { return s.keys }

// Err reports an error met while scanning.
func (s *IndexScan) Err() error { return s.err }

// Close releases the scan.
func (s *IndexScan) Close() error {
	err := s.it.Close()
	if cerr := s.snap.Close(); err == nil {
		err = cerr
	}
	return err
}

// Indexes lists ns's secondary indexes with their parsed specifications.
func (e *Engine) Indexes(ns Namespace) ([]catalog.Index, []*index.Spec, error) {
	coll := e.cat.Current().Collection(ns.DB, ns.Coll)
	if coll == nil {
		return nil, nil, nil
	}
	specs := make([]*index.Spec, len(coll.Indexes))
	for i, ix := range coll.Indexes {
		s, err := e.specs.get(ix)
		if err != nil {
			return nil, nil, err
		}
		specs[i] = s
	}
	return coll.Indexes, specs, nil
}
