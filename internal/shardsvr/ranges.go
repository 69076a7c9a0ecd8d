package shardsvr

import (
	"bytes"
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/shard"
)

// keyRange is a chunk's range [min, max) of shard keys of one pattern,
// with its bounds' encodings.
type keyRange struct {
	p          *shard.Pattern
	min, max   bsoncore.Document
	emin, emax []byte
}

func newRange(p *shard.Pattern, min, max bsoncore.Document) (keyRange, error) {
	r := keyRange{p: p, min: min, max: max}
	var err error
	if r.emin, err = p.Encode(min); err != nil {
		return r, err
	}
	r.emax, err = p.Encode(max)
	return r, err
}

// holds reports whether doc's shard key lies in the range.
func (r keyRange) holds(doc bsoncore.Document) bool {
	key, err := r.p.Extract(doc)
	if err != nil {
		return false
	}
	enc, err := r.p.Encode(key)
	if err != nil {
		return false
	}
	return bytes.Compare(enc, r.emin) >= 0 && bytes.Compare(enc, r.emax) < 0
}

// overlaps reports whether two ranges of one pattern share a key.
func (r keyRange) overlaps(o keyRange) bool {
	return bytes.Compare(r.emin, o.emax) < 0 && bytes.Compare(o.emin, r.emax) < 0
}

// splitNS splits "db.coll".
func splitNS(ns string) (db, coll string) {
	for i := 0; i < len(ns); i++ {
		if ns[i] == '.' {
			return ns[:i], ns[i+1:]
		}
	}
	return ns, ""
}

// deleteInRange removes this shard's documents of ns whose shard key lies
// in r, in batches of _ids read through the shard key's index (scan.go),
// and returns how many it removed. Of a versioned collection it purges
// them with their histories, deleted documents' included (versioned.go).
func (n *Node) deleteInRange(ctx context.Context, ns string, r keyRange) (int, error) {
	versioned, err := n.isVersioned(ctx, ns)
	if err != nil {
		return 0, err
	}
	db, coll := splitNS(ns)
	remove := func(ids bson.A) (int, error) {
		_, err := n.local(ctx, db, bson.D{{Key: "delete", Value: coll}, {Key: "deletes", Value: bson.A{
			bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}}}, {Key: "limit", Value: 0}},
		}}})
		return len(ids), err
	}
	if versioned {
		remove = func(ids bson.A) (int, error) { return n.purge(ctx, ns, ids) }
	}
	var ids bson.A
	removed := 0
	add := func(id bsoncore.Value) error {
		ids = append(ids, bson.RawValue{Type: bson.Type(id.Type), Value: id.Data})
		if len(ids) < 1000 {
			return nil
		}
		k, err := remove(ids)
		removed += k
		ids = nil
		return err
	}
	// The scan reads a snapshot, so deleting as it goes is safe.
	err = n.eachInRange(ctx, ns, r, bson.D{{Key: "_id", Value: 1}}, func(d bsoncore.Document, _ bool) error {
		return add(copyVal(d.Lookup("_id")))
	})
	if err == nil && versioned {
		var deleted []bsoncore.Value
		deleted, err = n.deletedInRange(ctx, ns, r)
		for _, id := range deleted {
			if err = add(id); err != nil {
				break
			}
		}
	}
	if err != nil || len(ids) == 0 {
		return removed, err
	}
	k, err := remove(ids)
	return removed + k, err
}

// exactChunk returns the index of m's chunk whose bounds are exactly
// [min, max) and the range, or -1 when no chunk is.
func exactChunk(m *shard.Map, min, max bsoncore.Document) (int, keyRange, error) {
	r, err := newRange(m.Pattern, min, max)
	if err != nil {
		return -1, r, err
	}
	for i, c := range m.Chunks {
		cr, _ := newRange(m.Pattern, c.Min, c.Max)
		if bytes.Equal(cr.emin, r.emin) && bytes.Equal(cr.emax, r.emax) {
			return i, r, nil
		}
	}
	return -1, r, nil
}

// ownsAny reports whether the config servers' map gives shard any chunk
// overlapping r.
func ownsAny(m *shard.Map, shardName string, r keyRange) bool {
	if m == nil {
		return false
	}
	for _, c := range m.Chunks {
		if c.Shard != shardName {
			continue
		}
		cr, err := newRange(m.Pattern, c.Min, c.Max)
		if err == nil && cr.overlaps(r) {
			return true
		}
	}
	return false
}
