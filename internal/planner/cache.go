package planner

import (
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
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

// shapeOf is the query's shape: the filter with every value replaced by
// its type (so {a: 5} and {a: 7} share a shape, {a: null} does not; an
// array lists each scalar type once, see shapeValue), the
// sort, the projection, and whether skip/limit are set.
func shapeOf(q *Query) string {
	var b strings.Builder
	shapeDoc(&b, q.RawFilter)
	b.WriteString("|s:")
	b.WriteString(bson.Raw(q.RawSort).String())
	b.WriteString("|p:")
	b.WriteString(bson.Raw(q.RawProj).String())
	fmt.Fprintf(&b, "|%t%t", q.Limit > 0, q.Skip > 0)
	return b.String()
}

func shapeDoc(b *strings.Builder, d bsoncore.Document) {
	elems, _ := d.Elements()
	b.WriteByte('{')
	for _, el := range elems {
		b.WriteString(strconv.Quote(el.Key()))
		b.WriteByte(':')
		shapeValue(b, el.Value())
		b.WriteByte(',')
	}
	b.WriteByte('}')
}

func shapeValue(b *strings.Builder, v bsoncore.Value) {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		shapeDoc(b, v.Document())
	case bsoncore.TypeArray:
		// Scalars count once per type, as MongoDB's query shapes write
		// "?array<?number>": an $in of 2 or of 10,000 numbers is one shape
		// (and one short key), not one cache entry per length. Documents
		// and arrays ($or branches, $in of documents) keep their shapes.
		vals, _ := v.Array().Values()
		var seen [256]bool
		b.WriteByte('[')
		for _, x := range vals {
			if x.Type != bsoncore.TypeEmbeddedDocument && x.Type != bsoncore.TypeArray {
				if seen[x.Type] {
					continue
				}
				seen[x.Type] = true
			}
			shapeValue(b, x)
			b.WriteByte(',')
		}
		b.WriteByte(']')
	default:
		b.WriteString(v.Type.String())
	}
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
func parsedQuery(filter bsoncore.Document) bson.D {
	var preds []bson.D
	elems, _ := filter.Elements()
	for _, el := range elems {
		k, v := el.Key(), el.Value()
		if strings.HasPrefix(k, "$") {
			if k == "$and" {
				for _, d := range docsOf(v) {
					pq := parsedQuery(d)
					if len(pq) == 1 && pq[0].Key == "$and" {
						for _, x := range pq[0].Value.(bson.A) {
							preds = append(preds, x.(bson.D))
						}
					} else if len(pq) > 0 {
						preds = append(preds, pq)
					}
				}
				continue
			}
			preds = append(preds, bson.D{{Key: k, Value: bson.RawValue{Type: bson.Type(v.Type), Value: v.Data}}})
			continue
		}
		if d, ok := v.DocumentOK(); ok && isOperatorDoc(d) {
			if _, err := d.LookupErr("$options"); err == nil {
				// $regex and $options are one predicate.
				preds = append(preds, bson.D{{Key: k, Value: bson.Raw(d)}})
				continue
			}
			ops, _ := d.Elements()
			for _, op := range ops {
				preds = append(preds, bson.D{{Key: k, Value: bson.D{{Key: op.Key(), Value: bson.RawValue{Type: bson.Type(op.Value().Type), Value: op.Value().Data}}}}})
			}
			continue
		}
		preds = append(preds, bson.D{{Key: k, Value: bson.D{{Key: "$eq", Value: bson.RawValue{Type: bson.Type(v.Type), Value: v.Data}}}}})
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
