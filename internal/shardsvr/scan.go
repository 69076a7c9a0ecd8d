package shardsvr

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/shard"
)

// Reading a range's documents: a migration's clone, the range deleter and
// the chunk sizes the balancer asks for read only the range, by a scan of
// the shard key's index between the range's bounds (find's hint, min and
// max, as MongoDB's migration and range deleter scan the shard key
// index), never the whole collection. The shard key's index is the one
// shardCollection requires: an index whose key pattern starts with the
// shard key's fields (the _id index for {_id: 1}), neither sparse nor
// partial, with the simple collation.

// keyIndex finds the shard key's index of ns: the shortest qualifying
// index whose key pattern starts with p's fields. nil when there is none
// (the collection is missing, or its index was dropped).
func (n *Node) keyIndex(ctx context.Context, ns string, p *shard.Pattern) (bsoncore.Document, error) {
	db, coll := splitNS(ns)
	reply, err := n.local(ctx, db, bson.D{{Key: "listIndexes", Value: coll}})
	if err != nil {
		if mongoerr.CodeOf(err) == mongoerr.NamespaceNotFound {
			return nil, nil
		}
		return nil, err
	}
	batch, _ := reply.Lookup("cursor", "firstBatch").ArrayOK()
	vals, _ := batch.Values()
	var best bsoncore.Document
	for _, v := range vals {
		spec, _ := v.DocumentOK()
		key, _ := spec.Lookup("key").DocumentOK()
		if !keyIndexSpec(spec) || !prefixedBy(key, p.Doc) {
			continue
		}
		if best == nil || len(key) < len(best) {
			best = key
		}
	}
	return best, nil
}

// keyIndexSpec reports whether an index may serve as the shard key's: it
// holds every document (not sparse, not partial), in simple order, and
// may be hinted (not hidden).
func keyIndexSpec(spec bsoncore.Document) bool {
	for _, f := range []string{"sparse", "hidden"} {
		if b, _ := spec.Lookup(f).BooleanOK(); b {
			return false
		}
	}
	if spec.Lookup("partialFilterExpression").Type != 0 {
		return false
	}
	if c, ok := spec.Lookup("collation").DocumentOK(); ok {
		if loc, _ := c.Lookup("locale").StringValueOK(); loc != "simple" {
			return false
		}
	}
	return true
}

// prefixedBy reports whether index key pattern key starts with the shard
// key pattern's fields, each in its kind (1 ascending, or "hashed").
func prefixedBy(key, pattern bsoncore.Document) bool {
	kels, _ := key.Elements()
	pels, _ := pattern.Elements()
	if len(kels) < len(pels) {
		return false
	}
	for i, pe := range pels {
		ke := kels[i]
		if ke.Key() != pe.Key() {
			return false
		}
		ps, pstr := pe.Value().StringValueOK()
		ks, kstr := ke.Value().StringValueOK()
		if pstr || kstr {
			if !pstr || !kstr || ps != ks {
				return false
			}
			continue
		}
		pf, _ := bsonx.AsFloat64(pe.Value())
		kf, _ := bsonx.AsFloat64(ke.Value())
		if pf <= 0 || kf <= 0 {
			return false
		}
	}
	return true
}

// extendBound is a range bound (the shard key's fields) as a bound of the
// index key: the index's further fields get their lowest value, MinKey
// (MaxKey for a descending field), so that [min, max) of the shard key is
// [min', max') of the index (MongoDB's extendRangeBound).
func extendBound(bound, key bsoncore.Document) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	bels, _ := bound.Elements()
	for _, el := range bels {
		b.AppendValue(el.Key(), el.Value())
	}
	kels, _ := key.Elements()
	for _, el := range kels[len(bels):] {
		if f, ok := bsonx.AsFloat64(el.Value()); ok && f < 0 {
			b.AppendMaxKey(el.Key())
		} else {
			b.AppendMinKey(el.Key())
		}
	}
	return b.Build()
}

// rangeRead returns the find options that read r's documents of ns
// through the shard key's index, and whether there is such an index
// (without one the caller reads the collection and checks r.holds).
func (n *Node) rangeRead(ctx context.Context, ns string, r keyRange) (bson.D, bool, error) {
	key, err := n.keyIndex(ctx, ns, r.p)
	if err != nil || key == nil {
		return nil, false, err
	}
	return bson.D{{Key: "hint", Value: rawDoc(key)}, {Key: "min", Value: rawDoc(extendBound(r.min, key))}, {Key: "max", Value: rawDoc(extendBound(r.max, key))}}, true, nil
}

// eachInRange calls fn with each of this shard's documents of ns whose
// shard key lies in r (through the shard key's index; by a collection scan
// when the index is gone), projected by proj when given and the index
// serves (fn's projected says which).
func (n *Node) eachInRange(ctx context.Context, ns string, r keyRange, proj bson.D, fn func(d bsoncore.Document, projected bool) error) error {
	opts, indexed, err := n.rangeRead(ctx, ns, r)
	if err != nil {
		return err
	}
	if !indexed {
		n.opts.Log.Warn("no shard key index: reading the range by a collection scan", "ns", ns, "key", r.p.String())
		proj = nil
	}
	db, coll := splitNS(ns)
	cmd := append(bson.D{{Key: "find", Value: coll}, {Key: "batchSize", Value: 10000}}, opts...)
	if proj != nil {
		cmd = append(cmd, bson.E{Key: "projection", Value: proj})
	}
	reply, err := n.local(ctx, db, cmd)
	for {
		if err != nil {
			return err
		}
		vals, id := batchOf(reply)
		for _, v := range vals {
			d, _ := v.DocumentOK()
			if !indexed && !r.holds(d) {
				continue
			}
			if err := fn(d, proj != nil); err != nil {
				if id != 0 {
					_, _ = n.local(ctx, db, bson.D{{Key: "killCursors", Value: coll}, {Key: "cursors", Value: bson.A{id}}})
				}
				return err
			}
		}
		if id == 0 {
			return nil
		}
		reply, err = n.local(ctx, db, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: coll}, {Key: "batchSize", Value: 10000}})
	}
}
