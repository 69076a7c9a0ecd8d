package engine

import (
	"bytes"
	"fmt"
	"slices"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/invariants"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

// Secondary index maintenance. Every write changes a document and all its
// index entries in the same request ("Indexes follow documents"):
//
//	i <indexID> <key> <keystring(_id)>  → typeBits                 (non-unique index)
//	i <indexID> <key>                   → keystring(_id) typeBits  (unique index)
//
// so a unique index finds a conflicting key with one point read inside the
// commit pipeline. typeBits (index.Spec.KeysAndTypeBits) is what the key
// loses of the document's values, usually nothing (empty); the _id's
// encoding is self-delimiting, so it ends where the type bits begin.

// specCache holds parsed index specifications by index id. Ids are never
// reused, but collMod changes a spec in place (expireAfterSeconds, hidden),
// so an entry is used only while its bytes are the catalog's.
type specCache struct{ m sync.Map }

func (c *specCache) get(ix catalog.Index) (*index.Spec, error) {
	if s, ok := c.m.Load(ix.ID); ok && bytes.Equal(s.(*index.Spec).Original, ix.Spec) {
		return s.(*index.Spec), nil
	}
	s, err := index.ParseSpec(bsoncore.Document(ix.Spec))
	if err != nil {
		return nil, fmt.Errorf("engine: index %s: stored specification no longer parses: %w", ix.Name, err)
	}
	c.m.Store(ix.ID, s)
	return s, nil
}

// indexEntry is one storage key of a document in one index.
type indexEntry struct {
	ix       *catalog.Index
	spec     *index.Spec
	key      []byte // the full storage key
	rawKey   []byte // the index key without prefix and _id
	typeBits []byte // the key's type bits, nil when it has none
}

// entriesOf computes doc's entries in every index of coll, and the
// multikey paths doc adds to indexes that did not record them yet.
func (e *Engine) entriesOf(coll *catalog.Collection, doc bsoncore.Document, idKey []byte) (entries []indexEntry, grown multikeyGrowth, err error) {
	for i := range coll.Indexes {
		ix := &coll.Indexes[i]
		spec, err := e.specs.get(*ix)
		if err != nil {
			return nil, nil, err
		}
		var keys [][]byte
		var tb []byte
		var mk index.Multikey
		if ix.TypeBits {
			keys, tb, mk, err = spec.KeysAndTypeBits(doc, nil, nil)
		} else {
			keys, mk, err = spec.Keys(doc, nil)
		}
		if err != nil {
			return nil, nil, err
		}
		if mk.IsMultikey() && growsMultikey(ix, mk) {
			grown = grown.add(ix.Name, mk)
		}
		prefix := storage.Prefix(nil, storage.SpaceIndex, ix.ID)
		for _, k := range keys {
			full := append(append([]byte(nil), prefix...), k...)
			if !spec.Unique {
				full = append(full, idKey...)
			}
			entries = append(entries, indexEntry{ix: ix, spec: spec, key: full, rawKey: k, typeBits: tb})
		}
	}
	return entries, grown, nil
}

// multikeyGrowth is the multikey paths some documents add, per index name.
type multikeyGrowth []struct {
	name string
	mk   index.Multikey
}

// add merges mk into the growth of index name.
func (g multikeyGrowth) add(name string, mk index.Multikey) multikeyGrowth {
	for i := range g {
		if g[i].name == name {
			g[i].mk.Add(mk)
			return g
		}
	}
	var own index.Multikey
	own.Add(mk) // a copy: mk may alias key generation buffers
	return append(g, struct {
		name string
		mk   index.Multikey
	}{name, own})
}

// merge adds every index's growth of o.
func (g multikeyGrowth) merge(o multikeyGrowth) multikeyGrowth {
	for _, x := range o {
		g = g.add(x.name, x.mk)
	}
	return g
}

// multikeyOf is the multikey paths ix records.
func multikeyOf(ix *catalog.Index) index.Multikey {
	return index.Multikey{Components: ix.MultikeyComponents, Paths: ix.MultikeyPaths}
}

// growsMultikey reports whether mk has a multikey path ix does not record.
// An index whose paths are unknown (an older catalog) stays so: recording
// only the paths seen from now on would claim the others are not multikey.
func growsMultikey(ix *catalog.Index, mk index.Multikey) bool {
	if !ix.Multikey {
		return true
	}
	if !ix.MultikeyPathsKnown() {
		return false
	}
	for i, c := range mk.Components {
		for _, x := range c {
			if i >= len(ix.MultikeyComponents) || !slices.Contains(ix.MultikeyComponents[i], x) {
				return true
			}
		}
	}
	for _, p := range mk.Paths {
		if !slices.Contains(ix.MultikeyPaths, p) {
			return true
		}
	}
	return false
}

// addEntries writes entries for the document whose _id encodes to idKey,
// refusing a unique key another document holds.
func (e *Engine) addEntries(tx *storage.Txn, ns Namespace, entries []indexEntry, idKey []byte) error {
	var holder []byte
	for _, en := range entries {
		if invariants.Enabled && faultSkipIndexWrites.Load() {
			continue
		}
		if !en.spec.Unique {
			if en.spec.PrepareUnique && !en.ix.Building {
				// Not unique yet, but no new duplicate: another document's
				// entry with this key has the same bytes up to the _id.
				other, err := tx.FirstWithPrefix(en.key[:len(en.key)-len(idKey)], en.key)
				if err != nil {
					return err
				}
				if other != nil {
					return duplicateKeyError(ns, en)
				}
			}
			tx.Set(en.key, en.typeBits)
			continue
		}
		var found bool
		var err error
		holder, found, err = tx.Get(holder[:0], en.key)
		if err != nil {
			return err
		}
		if found && !holdsID(holder, idKey) {
			return duplicateKeyError(ns, en)
		}
		tx.Set(en.key, en.value(idKey))
	}
	return nil
}

// removeEntries deletes the entries of the document whose _id encodes to
// idKey. While a unique index builds, the data may hold duplicate keys, so
// its entry is deleted only if this document holds it (see indexbuild.go).
func removeEntries(tx *storage.Txn, entries []indexEntry, idKey []byte) error {
	var holder []byte
	for _, en := range entries {
		if invariants.Enabled && faultSkipIndexWrites.Load() {
			continue
		}
		if en.spec.Unique && en.ix.Building {
			var found bool
			var err error
			if holder, found, err = tx.Get(holder[:0], en.key); err != nil {
				return err
			}
			if !found || !holdsID(holder, idKey) {
				continue
			}
		}
		tx.Delete(en.key)
	}
	return nil
}

// flagMultikey records in the catalog, inside tx, the multikey paths that
// documents added to the indexes of coll. It merges into the index as the
// catalog holds it now (a build's view of the collection may be older).
func (e *Engine) flagMultikey(tx *storage.Txn, coll *catalog.Collection, grown multikeyGrowth) error {
	ns := Namespace{DB: coll.DB, Coll: coll.Name}
	var created *catalog.Collection // the transaction's own, flagged in it (txn.go)
	if len(grown) > 0 && e.txn.in != nil {
		if created = e.txn.in.created[ns]; created == nil {
			tx = e.txn.outer // a statement's flags commit at once (txn.go)
		}
	}
	for _, g := range grown {
		cur := e.writeCollection(ns)
		if cur == nil || cur.Index(g.name) == nil {
			continue
		}
		ix := *cur.Index(g.name)
		known := ix.MultikeyPathsKnown()
		if ix.Multikey && !known {
			continue
		}
		mk := multikeyOf(&ix)
		mk = index.Multikey{Components: cloneComponents(mk.Components), Paths: slices.Clone(mk.Paths)}
		mk.Add(g.mk)
		ix.Multikey, ix.MultikeyComponents, ix.MultikeyPaths = true, mk.Components, mk.Paths
		if created != nil {
			e.txn.in.setCreated(tx, ns, withIndex(cur, ix))
			continue
		}
		if err := e.cat.UpdateIndex(tx, coll.DB, coll.Name, ix); err != nil {
			return err
		}
	}
	return nil
}

func cloneComponents(c [][]int) [][]int {
	out := make([][]int, len(c))
	for i, x := range c {
		out[i] = slices.Clone(x)
	}
	return out
}

// value is the value of the entry en of the document whose _id encodes
// to idKey.
func (en *indexEntry) value(idKey []byte) []byte {
	if !en.spec.Unique {
		return en.typeBits
	}
	return append(idKey[:len(idKey):len(idKey)], en.typeBits...)
}

// holdsID reports whether v, the value of a unique index's entry, names
// the document whose _id encodes to idKey.
func holdsID(v, idKey []byte) bool {
	rid, _, err := splitUniqueValue(v)
	return err == nil && bytes.Equal(rid, idKey)
}

// indexInsert adds a new document's entries in every index of ns.
func (e *Engine) indexInsert(tx *storage.Txn, ns Namespace, doc bsoncore.Document, idKey []byte) error {
	coll := e.writeCollection(ns)
	if coll == nil || len(coll.Indexes) == 0 {
		return nil
	}
	entries, multikey, err := e.entriesOf(coll, doc, idKey)
	if err != nil {
		return err
	}
	if err := e.addEntries(tx, ns, entries, idKey); err != nil {
		return err
	}
	return e.flagMultikey(tx, coll, multikey)
}

// indexReplace moves a document's entries from old to next: entries both
// have stay, the rest are deleted or added.
func (e *Engine) indexReplace(tx *storage.Txn, ns Namespace, old, next bsoncore.Document, idKey []byte) error {
	coll := e.writeCollection(ns)
	if coll == nil || len(coll.Indexes) == 0 {
		return nil
	}
	before, _, err := e.entriesOf(coll, old, idKey)
	if err != nil {
		return err
	}
	after, multikey, err := e.entriesOf(coll, next, idKey)
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, en := range after {
		keep[string(en.key)] = true
	}
	var gone []indexEntry
	for _, en := range before {
		if !keep[string(en.key)] {
			gone = append(gone, en)
		}
	}
	if err := removeEntries(tx, gone, idKey); err != nil {
		return err
	}
	if err := e.addEntries(tx, ns, after, idKey); err != nil {
		return err
	}
	return e.flagMultikey(tx, coll, multikey)
}

// indexDelete removes a deleted document's entries.
func (e *Engine) indexDelete(tx *storage.Txn, ns Namespace, old bsoncore.Document, idKey []byte) error {
	coll := e.writeCollection(ns)
	if coll == nil || len(coll.Indexes) == 0 {
		return nil
	}
	entries, _, err := e.entriesOf(coll, old, idKey)
	if err != nil {
		return err
	}
	return removeEntries(tx, entries, idKey)
}

// duplicateKeyError is MongoDB's E11000 for a secondary unique index: the
// message quotes the key as MongoDB's BSONObj::toString ("dup key: { a: 1 }").
func duplicateKeyError(ns Namespace, en indexEntry) *mongoerr.Error {
	vals, _, err := en.spec.DecodeKey(en.rawKey)
	kv := bsoncore.NewDocumentBuilder()
	if err == nil {
		for i, f := range en.spec.KeyPattern {
			if i < len(vals) {
				kv.AppendValue(f.Path, vals[i])
			}
		}
	}
	keyValue := kv.Build()
	return &mongoerr.Error{
		Code: mongoerr.DuplicateKey,
		Msg: fmt.Sprintf("E11000 duplicate key error collection: %s index: %s dup key: %s",
			ns, en.ix.Name, bsonx.ShellString(keyValue)),
		Extra: []mongoerr.Field{
			{Name: "keyPattern", Value: bson.Raw(en.spec.Key)},
			{Name: "keyValue", Value: bson.Raw(keyValue)},
		},
	}
}
