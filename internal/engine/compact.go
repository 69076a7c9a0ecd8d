package engine

import (
	"context"

	"github.com/cairndb/cairn/internal/storage"
)

// Compact runs a Pebble manual compaction over the key ranges of ns's
// documents and indexes: the memtable is flushed and the sorted files
// holding those ranges are rewritten, dropping deleted and overwritten
// versions. It returns how many bytes the ranges shrank on disk (0 when
// they did not: a fresh flush can grow them). A collection that does not
// exist has nothing to compact and reports false.
func (e *Engine) Compact(ctx context.Context, ns Namespace) (bytesFreed int64, exists bool, err error) {
	coll := e.cat.Current().Collection(ns.DB, ns.Coll)
	if coll == nil {
		return 0, false, nil
	}
	ranges := [][]byte{storage.Prefix(nil, storage.SpaceDocument, coll.ID)}
	for _, ix := range coll.Indexes {
		ranges = append(ranges, storage.Prefix(nil, storage.SpaceIndex, ix.ID))
	}
	pdb := e.db.Pebble()
	size := func() int64 {
		var n int64
		for _, p := range ranges {
			if u, err := pdb.EstimateDiskUsage(p, storage.PrefixEnd(p)); err == nil {
				n += int64(u)
			}
		}
		return n
	}
	before := size()
	for _, p := range ranges {
		if err := pdb.Compact(ctx, p, storage.PrefixEnd(p), false); err != nil {
			return 0, true, err
		}
	}
	return max(before-size(), 0), true, nil
}
