package planner

import (
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/query"
)

// Cache remembers, per collection and query shape, which plan won the
// trial, so the next query of that shape skips it.
//
// Invariant "Cache follows the catalog": an entry records the signature of
// the collection's index set (collection id, and each index's id-stable
// name, key, options, multikey flag, state) it was chosen under, and is
// used only while the signature is unchanged. createIndexes, dropIndexes,
// collMod (hidden), a drop or a rename all change what a reader sees, so a
// stale entry is never used; Clear drops entries eagerly (planCacheClear).
type Cache struct {
	mu sync.Mutex
	m  map[string]cacheEntry
}

// maxCacheEntries bounds the cache; beyond it the cache starts over.
const maxCacheEntries = 5000

// cacheEntry is a cached choice: the winning candidate's index and
// direction (candidate.index: an index name, "_id_", a wildcard index's
// name and path, "$or:" and the branches' indexes, "" for a collection
// scan), under the index set signature sig.
type cacheEntry struct {
	sig     string
	index   string
	reverse bool
}

// NewCache returns an empty plan cache.
func NewCache() *Cache { return &Cache{m: map[string]cacheEntry{}} }

func (c *Cache) get(key, sig string) (cacheEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if ok && e.sig != sig {
		delete(c.m, key)
		return cacheEntry{}, false
	}
	return e, ok
}

func (c *Cache) put(key string, e cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxCacheEntries {
		c.m = map[string]cacheEntry{}
	}
	c.m[key] = e
}

// Clear drops the entries of namespace ns ("db.coll"), or all when ns is "".
func (c *Cache) Clear(ns string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if ns == "" || strings.HasPrefix(k, ns+"\x00") {
			delete(c.m, k)
		}
	}
}

// ClearShape drops the entries of ns for q's query shape (planCacheClear
// with query, sort, projection and collation): its filter's shape, sort,
// projection and collation, whatever its skip and limit (which the
// command cannot name). It returns how many it dropped.
func (c *Cache) ClearShape(ns string, q *Query) int {
	full := shapeOf(q)
	prefix, collated := ns+"\x00"+shapeCore(q), collationPart(full)
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k := range c.m {
		if strings.HasPrefix(k, prefix) && collationPart(k) == collated {
			delete(c.m, k)
			n++
		}
	}
	return n
}

// collationPart is the collation suffix of a shape ("" for the simple one).
func collationPart(shape string) string {
	if i := strings.LastIndex(shape, "|c:"); i >= 0 {
		return shape[i:]
	}
	return ""
}

// Len is the number of cached plans.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// indexSignature identifies the index set a reader sees. It is built on
// every query that has several candidates, so by appends rather than fmt.
func indexSignature(r *engine.Reader) string {
	b := make([]byte, 0, 256)
	b = strconv.AppendUint(b, r.CollectionID(), 10)
	for _, ix := range r.Indexes() {
		b = append(b, '|')
		b = strconv.AppendQuote(b, ix.Name)
		b = append(b, ':')
		b = hex.AppendEncode(b, ix.Spec.Original)
		b = append(b, ':')
		b = strconv.AppendBool(b, ix.Multikey)
		b = append(b, ':')
		b = strconv.AppendBool(b, ix.Building)
		b = append(b, ':')
		for _, comps := range ix.MultikeyPaths.Components {
			b = append(b, '[')
			for _, c := range comps {
				b = strconv.AppendInt(b, int64(c), 10)
				b = append(b, ',')
			}
			b = append(b, ']')
		}
		for _, p := range ix.MultikeyPaths.Paths {
			b = strconv.AppendQuote(b, p)
		}
	}
	return string(b)
}

// shapeOf is the query's shape: the filter's shape (query.Filter's
// AppendShape: values replaced by their types), the sort, the projection,
// and whether skip/limit are set.
func shapeOf(q *Query) string {
	var b strings.Builder
	b.WriteString(shapeCore(q))
	fmt.Fprintf(&b, "%t%t", q.Limit > 0, q.Skip > 0)
	if q.Collation != nil { // the collation is part of a shape, as in MongoDB
		b.WriteString("|c:")
		b.WriteString(bson.Raw(q.Collation.Document()).String())
	}
	return b.String()
}

// shapeCore is the part of a shape planCacheClear can name: the filter's
// shape, the sort and the projection, ending in "|".
func shapeCore(q *Query) string {
	var b strings.Builder
	q.Filter.AppendShape(&b)
	b.WriteString("|s:")
	b.WriteString(bson.Raw(q.RawSort).String())
	b.WriteString("|p:")
	b.WriteString(bson.Raw(q.RawProj).String())
	b.WriteString("|")
	return b.String()
}

// hashHex is a shape hash as MongoDB prints queryHash and planCacheKey:
// eight upper-case hex digits.
func hashHex(s string) string {
	h := fnv.New32a()
	h.Write([]byte(s))
	return fmt.Sprintf("%08X", h.Sum32())
}

// parsedQuery is the filter as MongoDB's explain shows it: each plain
// equality as {$eq: v}, several predicates under one $and.
func parsedQuery(c query.Conjunction) bson.D {
	var preds []bson.D
	for i := range c {
		cl := &c[i]
		switch cl.Kind {
		case query.AndClause:
			for _, b := range cl.Branches {
				pq := parsedQuery(b)
				if len(pq) == 1 && pq[0].Key == "$and" {
					for _, x := range pq[0].Value.(bson.A) {
						preds = append(preds, x.(bson.D))
					}
				} else if len(pq) > 0 {
					preds = append(preds, pq)
				}
			}
			continue
		case query.PathClause:
		default:
			preds = append(preds, bson.D{{Key: cl.Key, Value: rawValue(cl.Value)}})
			continue
		}
		if len(cl.Ops) == 1 && cl.Ops[0].Implicit {
			preds = append(preds, bson.D{{Key: cl.Key, Value: bson.D{{Key: "$eq", Value: rawValue(cl.Value)}}}})
			continue
		}
		if slices.ContainsFunc(cl.Ops, func(op query.Op) bool { return op.Name == "$options" }) {
			// $regex and $options are one predicate.
			preds = append(preds, bson.D{{Key: cl.Key, Value: bson.Raw(cl.Value.Data)}})
			continue
		}
		for _, op := range cl.Ops {
			preds = append(preds, bson.D{{Key: cl.Key, Value: bson.D{{Key: op.Name, Value: rawValue(op.Value)}}}})
		}
	}
	switch len(preds) {
	case 0:
		return bson.D{}
	case 1:
		return preds[0]
	}
	arr := bson.A{}
	for _, p := range preds {
		arr = append(arr, p)
	}
	return bson.D{{Key: "$and", Value: arr}}
}

func rawValue(v bsoncore.Value) bson.RawValue {
	return bson.RawValue{Type: bson.Type(v.Type), Value: v.Data}
}
