package shard

import (
	"sort"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/planner"
	"github.com/cairndb/cairn/internal/query"
)

// maxTargetRanges bounds how many key ranges a filter's point lists expand
// to (the product of the leading fields' points); beyond it the rest of
// the key is left open, which only widens the answer.
const maxTargetRanges = 1024

// keyRange is a closed range [lo, hi] of encoded shard keys.
type keyRange struct{ lo, hi []byte }

// Target returns the shards that may hold documents matching filter, in
// the order their chunks come ("Targeting is sound"): a filter with
// equality, $in or ranges on the shard key's leading fields reaches only
// the owners of those ranges; one that leaves the first field open
// reaches every shard that owns a chunk. A filter that can match nothing
// targets no shard. exact is true when filter names one shard key value
// with equality on every field (a write that needs one target).
func (m *Map) Target(filter bsoncore.Document) (shards []string, exact bool, err error) {
	f, err := query.Parse(filter)
	if err != nil {
		return nil, false, err
	}
	bounds := planner.KeyBounds(f, m.Pattern.spec)
	ranges, exact := m.ranges(bounds)
	seen := map[string]bool{}
	for _, r := range ranges {
		start := m.find(r.lo)
		for i := start; i < len(m.Chunks); i++ {
			c := &m.Chunks[i]
			if i > start && string(c.min) > string(r.hi) {
				break
			}
			if !seen[c.Shard] {
				seen[c.Shard] = true
				shards = append(shards, c.Shard)
			}
		}
	}
	return shards, exact && len(ranges) == 1, nil
}

// ranges turns the bounds of each key field into closed ranges of encoded
// keys: leading fields bounded to points multiply out; the first field
// that is not is expanded by its intervals; later fields stay open.
func (m *Map) ranges(bounds []planner.OIL) ([]keyRange, bool) {
	prefixes := [][]byte{nil}
	for i, oil := range bounds {
		ivs := oil.Intervals()
		if len(ivs) == 0 {
			return nil, false // the filter admits no value of this field
		}
		points := !oil.IsFull()
		for _, iv := range ivs {
			points = points && iv.IsPoint()
		}
		if points && len(prefixes)*len(ivs) <= maxTargetRanges {
			var next [][]byte
			for _, p := range prefixes {
				for _, iv := range ivs {
					next = append(next, keystring.Append(append([]byte(nil), p...), iv.Lo))
				}
			}
			prefixes = next
			continue
		}
		if !points && oil.IsFull() {
			ivs = []planner.Interval{{Lo: bsoncore.Value{Type: bsoncore.TypeMinKey}, Hi: bsoncore.Value{Type: bsoncore.TypeMaxKey}, LoIncl: true, HiIncl: true}}
		}
		var out []keyRange
		for _, p := range prefixes {
			for _, iv := range ivs {
				lo := keystring.Append(append([]byte(nil), p...), iv.Lo)
				hi := keystring.Append(append([]byte(nil), p...), iv.Hi)
				for range bounds[i+1:] {
					lo = keystring.Append(lo, bsoncore.Value{Type: bsoncore.TypeMinKey})
					hi = keystring.Append(hi, bsoncore.Value{Type: bsoncore.TypeMaxKey})
				}
				out = append(out, keyRange{lo, hi})
			}
		}
		return sortRanges(out), false
	}
	out := make([]keyRange, len(prefixes))
	for i, p := range prefixes {
		out[i] = keyRange{p, p}
	}
	return sortRanges(out), true
}

func sortRanges(rs []keyRange) []keyRange {
	sort.Slice(rs, func(i, j int) bool { return string(rs[i].lo) < string(rs[j].lo) })
	return rs
}
