package engine

import (
	"context"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/opctx"
	"github.com/cairndb/cairn/internal/storage"
)

// CollectionStats are the figures collStats, $collStats and dbStats report.
type CollectionStats struct {
	Count       int64
	DataSize    int64 // bytes of BSON
	StorageSize int64 // bytes of the documents on disk, estimated
	Indexes     int   // secondary indexes
	// IndexSizes has one entry per index, the _id index first, then the
	// secondary indexes in creation order.
	IndexSizes []IndexSize
}

// IndexSize is the size of one index in bytes.
type IndexSize struct {
	Name  string
	Bytes int64
}

// TotalIndexSize sums IndexSizes.
func (st CollectionStats) TotalIndexSize() int64 {
	var n int64
	for _, s := range st.IndexSizes {
		n += s.Bytes
	}
	return n
}

// CollectionStats counts ns's documents and bytes, from one snapshot. It
// scans the collection and its indexes: exact, but O(n); counters kept by
// the commit pipeline can replace it when a workload needs fast collStats.
//
// Sizes: StorageSize is Pebble's EstimateDiskUsage over the documents' key
// range (compressed bytes in sorted files; writes still in the memtable
// are not on disk yet and count 0). Index sizes are the bytes of the
// index's keys and values as stored, uncompressed, summed by the scan:
// Pebble's estimate is 0 for an index whose entries are all still in the
// memtable, which made a fresh index look empty. The _id index is the
// document keyspace itself (documents are clustered by _id), so its size
// is the bytes of the encoded _ids, what a separate _id index would hold.
func (e *Engine) CollectionStats(ctx context.Context, ns Namespace) (CollectionStats, error) {
	coll := e.cat.Current().Collection(ns.DB, ns.Coll)
	if coll == nil {
		return CollectionStats{}, nil
	}
	st := CollectionStats{Indexes: len(coll.Indexes)}
	snap := e.db.NewSnapshot()
	defer snap.Close()
	prefix := storage.Prefix(nil, storage.SpaceDocument, coll.ID)
	docs, err := scanRange(ctx, snap, prefix)
	if err != nil {
		return st, err
	}
	st.Count, st.DataSize = docs.keys, docs.valueBytes
	st.IndexSizes = append(st.IndexSizes, IndexSize{Name: catalog.IDIndexName, Bytes: docs.keyBytes})
	for _, ix := range coll.Indexes {
		p := storage.Prefix(nil, storage.SpaceIndex, ix.ID)
		r, err := scanRange(ctx, snap, p)
		if err != nil {
			return st, err
		}
		stored := r.keyBytes + r.keys*int64(len(p)) + r.valueBytes
		st.IndexSizes = append(st.IndexSizes, IndexSize{Name: ix.Name, Bytes: stored})
	}
	size, err := e.db.Pebble().EstimateDiskUsage(prefix, storage.PrefixEnd(prefix))
	if err != nil {
		return st, err
	}
	st.StorageSize = int64(size)
	return st, nil
}

// rangeSizes are the figures of one key range: how many keys, the bytes of
// those keys without the range's prefix, and the bytes of their values.
type rangeSizes struct{ keys, keyBytes, valueBytes int64 }

// scanRange walks the keys under prefix and sums their sizes; it stops
// with ctx's cause when ctx ends (a collection's every key is a long walk).
func scanRange(ctx context.Context, snap *storage.Snapshot, prefix []byte) (rangeSizes, error) {
	var r rangeSizes
	it, err := snap.NewIter(prefix, storage.PrefixEnd(prefix))
	if err != nil {
		return r, err
	}
	var poll opctx.Poll
	for ok := it.First(); ok; ok = it.Next() {
		if err := poll.Err(ctx); err != nil {
			_ = it.Close()
			return rangeSizes{}, err
		}
		v, err := it.Value()
		if err != nil {
			_ = it.Close()
			return rangeSizes{}, err
		}
		r.keys++
		r.keyBytes += int64(len(it.Key()) - len(prefix))
		r.valueBytes += int64(len(v))
	}
	return r, it.Close()
}

// DatabaseSize estimates the bytes on disk of db's collections and their
// indexes (listDatabases' sizeOnDisk, which counts both in MongoDB).
func (e *Engine) DatabaseSize(db string) int64 {
	var total int64
	add := func(prefix []byte) {
		if n, err := e.db.Pebble().EstimateDiskUsage(prefix, storage.PrefixEnd(prefix)); err == nil {
			total += int64(n)
		}
	}
	for _, c := range e.cat.Current().Collections(db) {
		add(storage.Prefix(nil, storage.SpaceDocument, c.ID))
		for _, ix := range c.Indexes {
			add(storage.Prefix(nil, storage.SpaceIndex, ix.ID))
		}
	}
	return total
}
