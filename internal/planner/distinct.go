package planner

import (
	"bytes"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/keystring"
)

// A distinct scan (MongoDB's DISTINCT_SCAN) reads an index whose first
// field is Query.DistinctPath and returns, per value of that field, only
// the first entry within the bounds in scan order, then seeks past every
// other entry with that value. It serves "$sort then $group on the sort's
// first field with only $first accumulators": the $group keeps the first
// document of each group, and the scan returns exactly those documents,
// in the same order.
//
// It is planned only when that is plainly so (MongoDB's conditions,
// narrowed where unsure):
//   - the index gives the requested order and the sort's first field is
//     the distinct path, the index's first field, ascending or descending;
//   - the index is not multikey at all: an array would give a document
//     several keys and several places in the order (SERVER-28952), and
//     distinct values of the path would no longer be the $group's keys;
//   - it is neither sparse nor partial: those lack documents whose path is
//     missing, which $group gathers under null (SERVER-110423);
//   - the bounds hold the whole filter (no residual for FETCH): the first
//     entry within the bounds must be the first matching document, which a
//     filter applied after the seek would not ensure;
//   - no shard filter (Query.Owned): the first entry of a value may be an
//     orphan, which the filter drops, while a later one is owned;
//   - no skip, limit, projection, count, min or max, and no numeric part
//     in the path (an index reads "a.0" as an array position, $group's
//     "$a.0" as a field named "0").

// distinctCandidate plans the distinct scan of the first index that
// qualifies, or nil.
func (pl *planning) distinctCandidate() *candidate {
	q := pl.q
	if q.DistinctPath == "" || q.Owned != nil || hasNumericPart(q.DistinctPath) || q.Sort == nil || q.Skip > 0 || q.Limit > 0 || q.Proj != nil || q.Count ||
		len(q.Min) > 5 || len(q.Max) > 5 {
		return nil
	}
	keys, ok := sortKeys(q.RawSort)
	if !ok || len(keys) == 0 || keys[0].path != q.DistinctPath {
		return nil
	}
	for _, ix := range pl.ixs {
		if !distinctIndex(ix, q.DistinctPath) {
			continue
		}
		bounds := pl.bounds(ix)
		sorted, reverse := pl.providesSort(ix, bounds)
		if !sorted {
			continue
		}
		if len(q.Filter.Tree()) > 0 {
			if f, _ := pl.residual(ix); f != nil {
				continue
			}
		}
		scan := newIXScan(ix, bounds, reverse)
		scan.distinct = true
		c := pl.finish(&fetch{oneInput: input(scan)}, true)
		c.index, c.reverse = ix.name, reverse
		return c
	}
	return nil
}

// distinctIndex reports whether ix may be scanned distinct on path: see
// the conditions above.
func distinctIndex(ix *indexRef, path string) bool {
	s := ix.spec
	if ix.isID || ix.multikey || ix.wildPath != "" || s.IsWildcard() || s.IsGeo() || s.Sparse || s.PartialFilterExpression != nil {
		return false
	}
	f := s.KeyPattern
	return len(f) > 0 && f[0].Path == path && (f[0].Kind == index.Ascending || f[0].Kind == index.Descending)
}

// skipPast sets the scan to resume, within the range it is reading, after
// every entry whose first field equals that of key (before them when
// reading in reverse). ok is false when key does not split (never for
// keys the index wrote) or nothing of the range is left.
func (s *ixScan) skipPast(key []byte) (engine.KeyRange, bool) {
	n, err := keystring.Len(key)
	if err != nil || n == 0 {
		return engine.KeyRange{}, false
	}
	prefix := append([]byte(nil), key[:n]...)
	rest := s.curRng
	if s.reverse {
		rest.Hi = prefix
	} else if rest.Lo = prefixEnd(prefix); rest.Lo == nil {
		return engine.KeyRange{}, false
	}
	if rest.Lo != nil && rest.Hi != nil && bytes.Compare(rest.Lo, rest.Hi) >= 0 {
		return engine.KeyRange{}, false
	}
	return rest, true
}
