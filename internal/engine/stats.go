package engine

import (
	"github.com/cairndb/cairn/internal/storage"
)

// CollectionStats are the figures collStats and dbStats report.
type CollectionStats struct {
	Count       int64
	DataSize    int64 // bytes of BSON
	StorageSize int64 // bytes on disk, estimated
	Indexes     int   // secondary indexes
}

// CollectionStats counts ns's documents and bytes. It scans the collection:
// exact, but O(n); counters kept by the commit pipeline can replace it when
// a workload needs fast collStats.
func (e *Engine) CollectionStats(ns Namespace) (CollectionStats, error) {
	coll := e.cat.Current().Collection(ns.DB, ns.Coll)
	if coll == nil {
		return CollectionStats{}, nil
	}
	var st CollectionStats
	st.Indexes = len(coll.Indexes)
	it, err := e.Scan(ns)
	if err != nil {
		return st, err
	}
	for it.Next() {
		st.Count++
		st.DataSize += int64(len(it.Doc()))
	}
	if err := it.Close(); err != nil {
		return st, err
	}
	prefix := storage.Prefix(nil, storage.SpaceDocument, coll.ID)
	size, err := e.db.Pebble().EstimateDiskUsage(prefix, storage.PrefixEnd(prefix))
	if err != nil {
		return st, err
	}
	st.StorageSize = int64(size)
	return st, nil
}

// DatabaseSize estimates the bytes on disk of db's collections.
func (e *Engine) DatabaseSize(db string) int64 {
	var total int64
	for _, c := range e.cat.Current().Collections(db) {
		prefix := storage.Prefix(nil, storage.SpaceDocument, c.ID)
		if n, err := e.db.Pebble().EstimateDiskUsage(prefix, storage.PrefixEnd(prefix)); err == nil {
			total += int64(n)
		}
	}
	return total
}
