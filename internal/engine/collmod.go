package engine

import (
	"bytes"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
	"github.com/cairndb/cairn/internal/validation"
)

// IndexChange is collMod's index option: which index (by Name or Key) and
// what to change. expireAfterSeconds, hidden and prepareUnique change in
// place (the keys an index holds do not depend on them); unique: true
// converts an index that has prepareUnique, rewriting its entries in the
// unique layout in the same commit, or fails with
// CannotConvertIndexToUnique (359) listing the documents that share a key,
// as MongoDB 7.0 does. DryRun only checks that conversion.
type IndexChange struct {
	Name               string
	Key                bsoncore.Document
	ExpireAfterSeconds *int64
	Hidden             *bool
	PrepareUnique      *bool
	Unique             *bool
	DryRun             bool
}

// IndexChangeResult holds the old and new values collMod replies with
// (nil: not changed).
type IndexChangeResult struct {
	OldExpire, NewExpire               *int64
	OldHidden, NewHidden               *bool
	OldPrepareUnique, NewPrepareUnique *bool
	NewUnique                          *bool
}

// ModifyIndex applies ch to an index of ns, in one commit.
func (e *Engine) ModifyIndex(ns Namespace, ch IndexChange) (IndexChangeResult, error) {
	return e.CollMod(ns, nil, &ch)
}

// CollMod applies a collMod in one commit: set replaces the named fields of
// ns's options (validator, validationLevel, validationAction; checked as
// create checks them; a capped collection's size and max, after which it
// is trimmed to its new limits) and ch, when not nil, changes an index. Writes
// applied after the commit obey the new validation rules ("Valid on
// commit").
func (e *Engine) CollMod(ns Namespace, set []bsoncore.Element, ch *IndexChange) (IndexChangeResult, error) {
	var res IndexChangeResult
	err := e.db.Write(func(tx *storage.Txn) error {
		res = IndexChangeResult{}
		if len(set) > 0 {
			if err := e.setOptions(tx, ns, set); err != nil {
				return err
			}
			if err := e.cappedTrim(tx, ns); err != nil { // new size or max
				return err
			}
			if c := e.cat.Working().Collection(ns.DB, ns.Coll); c != nil {
				e.logCommand(tx, ns.DB, c.UUID.Data, cmdDoc("collMod", strVal(ns.Coll), nil, set...))
			}
		}
		if ch == nil {
			return nil
		}
		var err error
		res, err = e.modifyIndex(tx, ns, *ch)
		return err
	})
	return res, err
}

// setOptions replaces the fields set of ns's options inside tx.
func (e *Engine) setOptions(tx *storage.Txn, ns Namespace, set []bsoncore.Element) error {
	coll := e.cat.Working().Collection(ns.DB, ns.Coll)
	if coll == nil {
		return mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist: %s", ns)
	}
	opts := bsoncore.Document(emptyIfNil(coll.Options))
	if i := slices.IndexFunc(set, func(el bsoncore.Element) bool { return el.Key() == "expireAfterSeconds" }); i >= 0 {
		_, clustered := ClusteredOf(coll)
		if _, err := opts.LookupErr("timeseries"); err != nil && !clustered {
			return mongoerr.New(mongoerr.InvalidOptions, "collMod: expireAfterSeconds is only for clustered and time-series collections; %s is neither", ns)
		}
		// "off" removes the TTL (MongoDB's collMod); the stored option is
		// only ever a number.
		if off, _ := set[i].Value().StringValueOK(); off == "off" {
			opts = withoutField(opts, "expireAfterSeconds")
			set = slices.Delete(slices.Clone(set), i, i+1)
		}
	}
	next := bson.Raw(withFields(opts, set))
	if err := validation.CheckOptions("collMod", ns.DB, ns.Coll, next); err != nil {
		return err
	}
	_, capped := CappedOf(coll)
	if err := checkVersioningChange("collMod", coll.Options, next, capped); err != nil {
		return err
	}
	_, was := VersioningOf(coll)
	if err := e.cat.SetOptions(tx, ns.DB, ns.Coll, next); err != nil {
		return err
	}
	if ver, now := VersioningOf(e.cat.Working().Collection(ns.DB, ns.Coll)); now && !was {
		return e.startHistory(tx, ns, coll.ID, ver)
	}
	return nil
}

// modifyIndex applies ch to an index of ns inside tx.
func (e *Engine) modifyIndex(tx *storage.Txn, ns Namespace, ch IndexChange) (IndexChangeResult, error) {
	var res IndexChangeResult
	coll := e.cat.Working().Collection(ns.DB, ns.Coll)
	if coll == nil {
		return res, mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist: %s", ns)
	}
	if _, capped := CappedOf(coll); capped && ch.ExpireAfterSeconds != nil {
		return res, mongoerr.New(mongoerr.InvalidOptions, "TTL indexes are not supported for capped collections.")
	}
	ix, err := findIndex(coll, ch)
	if err != nil {
		return res, err
	}
	if ch.Unique != nil && !*ch.Unique {
		return res, mongoerr.New(mongoerr.BadValue, "Cannot make index non-unique")
	}
	if ix == nil { // the _id index
		switch {
		case ch.ExpireAfterSeconds != nil:
			return res, mongoerr.New(mongoerr.InvalidOptions, "the _id field does not support TTL indexes")
		case ch.Hidden != nil:
			return res, mongoerr.New(mongoerr.BadValue, "can't hide _id index")
		}
		return res, nil // unique already: unique and prepareUnique change nothing
	}
	if ix.Building {
		return res, mongoerr.New(mongoerr.CannotCreateIndex, "cannot modify index %s of %s while it is being built", ix.Name, ns)
	}
	spec, err := e.specs.get(*ix)
	if err != nil {
		return res, err
	}
	var set []bsoncore.Element
	if ch.ExpireAfterSeconds != nil {
		if spec.ExpireAfterSeconds == nil {
			return res, mongoerr.New(mongoerr.InvalidOptions, "no expireAfterSeconds field to update")
		}
		old, nv := *spec.ExpireAfterSeconds, *ch.ExpireAfterSeconds
		res.OldExpire, res.NewExpire = &old, &nv
		set = append(set, bsoncore.AppendInt64Element(nil, "expireAfterSeconds", nv))
	}
	if ch.Hidden != nil {
		old, nv := spec.Hidden, *ch.Hidden
		if old != nv {
			res.OldHidden, res.NewHidden = &old, &nv
		}
		set = append(set, bsoncore.AppendBooleanElement(nil, "hidden", nv))
	}
	settingPrepare := ch.PrepareUnique != nil && *ch.PrepareUnique != spec.PrepareUnique && !spec.Unique
	if settingPrepare && (ch.Unique != nil || ch.Hidden != nil || ch.ExpireAfterSeconds != nil) {
		return res, mongoerr.New(mongoerr.InvalidOptions, "prepareUnique cannot be combined with any other modification.")
	}
	if settingPrepare {
		old, nv := spec.PrepareUnique, *ch.PrepareUnique
		res.OldPrepareUnique, res.NewPrepareUnique = &old, &nv
		set = append(set, bsoncore.AppendBooleanElement(nil, "prepareUnique", nv))
	}
	convert := ch.Unique != nil && !spec.Unique
	if convert && !spec.PrepareUnique {
		return res, mongoerr.New(mongoerr.InvalidOptions, "Cannot make index unique with 'prepareUnique=false'. Run collMod to set it first.")
	}
	if ch.DryRun {
		if !convert {
			return res, nil // unique already: nothing to check
		}
		return res, e.convertToUnique(tx, coll, ix, spec, true)
	}
	if convert {
		if err := e.convertToUnique(tx, coll, ix, spec, false); err != nil {
			return res, err
		}
		nv := true
		res.NewUnique = &nv
		set = append(set, bsoncore.AppendBooleanElement(nil, "unique", true))
	}
	doc := withFields(spec.Original, set)
	if convert {
		doc = withoutField(doc, "prepareUnique") // a unique index is not also preparing
	}
	next, err := index.ParseSpec(doc)
	if err != nil {
		return res, err
	}
	changed := *ix
	changed.Spec = bson.Raw(next.Original)
	return res, e.cat.UpdateIndex(tx, ns.DB, ns.Coll, changed)
}

// convertToUnique rewrites the entries of ix, a non-unique index whose
// spec is spec, in the unique layout (key → _id and type bits), inside tx;
// or, when documents share a key, fails with CannotConvertIndexToUnique and
// their _ids, grouped by key, as MongoDB's violations. dryRun only checks.
func (e *Engine) convertToUnique(tx *storage.Txn, coll *catalog.Collection, ix *catalog.Index, spec *index.Spec, dryRun bool) error {
	prefix := storage.Prefix(nil, storage.SpaceIndex, ix.ID)
	it, err := tx.NewIter(prefix, storage.PrefixEnd(prefix))
	if err != nil {
		return err
	}
	type entry struct{ key, rawKey, idKey, value []byte }
	var entries []entry
	for ok := it.First(); ok; ok = it.Next() {
		k := append([]byte(nil), it.Key()...)
		v, err := it.Value()
		if err != nil {
			it.Close()
			return err
		}
		rest := k[len(prefix):]
		for range spec.KeyParts() {
			n, err := keystring.Len(rest)
			if err != nil {
				it.Close()
				return err
			}
			rest = rest[n:]
		}
		entries = append(entries, entry{key: k, rawKey: k[len(prefix) : len(k)-len(rest)], idKey: rest, value: append([]byte(nil), v...)})
	}
	if err := it.Close(); err != nil {
		return err
	}
	// Entries sort by key, then _id: documents sharing a key are adjacent.
	violations := bsoncore.NewArrayBuilder()
	found := false
	for i := 0; i < len(entries); {
		j := i + 1
		for j < len(entries) && bytes.Equal(entries[j].rawKey, entries[i].rawKey) {
			j++
		}
		if j-i > 1 {
			found = true
			ids := bsoncore.NewArrayBuilder()
			for _, en := range entries[i:j] {
				doc, ok, err := tx.Get(nil, storage.DocKey(nil, coll.ID, en.idKey))
				if err != nil {
					return err
				}
				if id, err := bsoncore.Document(doc).LookupErr("_id"); ok && err == nil {
					ids.AppendValue(id)
				}
			}
			violations.AppendDocument(bsoncore.NewDocumentBuilder().AppendArray("ids", ids.Build()).Build())
		}
		i = j
	}
	if found {
		return &mongoerr.Error{
			Code:  mongoerr.CannotConvertIndexToUnique,
			Msg:   "Cannot convert the index to unique. Please resolve conflicting documents before running collMod again.",
			Extra: []mongoerr.Field{{Name: "violations", Value: bson.RawArray(violations.Build())}},
		}
	}
	if dryRun {
		return nil
	}
	for _, en := range entries {
		tx.Delete(en.key)
		tx.Set(append(append([]byte(nil), prefix...), en.rawKey...), append(en.idKey[:len(en.idKey):len(en.idKey)], en.value...))
	}
	return nil
}

// withoutField returns doc without its field name.
func withoutField(doc bsoncore.Document, name string) bsoncore.Document {
	idx, out := bsoncore.AppendDocumentStart(nil)
	elems, _ := doc.Elements()
	for _, el := range elems {
		if el.Key() != name {
			out = append(out, el...)
		}
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// findIndex picks the index ch names; nil (without error) is the _id index.
func findIndex(coll *catalog.Collection, ch IndexChange) (*catalog.Index, error) {
	for i := range coll.Indexes {
		ix := &coll.Indexes[i]
		if (ch.Name != "" && ix.Name == ch.Name) || (ch.Key != nil && bytes.Equal(ix.Key, ch.Key)) {
			return ix, nil
		}
	}
	if ch.Name == catalog.IDIndexName || (ch.Key != nil && isIDKey(ch.Key)) {
		return nil, nil
	}
	what := ch.Name
	if ch.Key != nil {
		what = bson.Raw(ch.Key).String()
	}
	return nil, mongoerr.New(mongoerr.IndexNotFound, "cannot find index %s for ns %s", what, coll.Namespace())
}

func isIDKey(key bsoncore.Document) bool {
	elems, err := key.Elements()
	if err != nil || len(elems) != 1 || elems[0].Key() != "_id" {
		return false
	}
	n, ok := elems[0].Value().AsInt64OK()
	return ok && n == 1
}

// withFields returns doc with each element of set replacing the field of
// the same name, or appended when doc lacks it.
func withFields(doc bsoncore.Document, set []bsoncore.Element) bsoncore.Document {
	idx, out := bsoncore.AppendDocumentStart(nil)
	used := make([]bool, len(set))
	elems, _ := doc.Elements()
	for _, el := range elems {
		replaced := false
		for i, s := range set {
			if s.Key() == el.Key() {
				out = append(out, s...)
				used[i], replaced = true, true
				break
			}
		}
		if !replaced {
			out = append(out, el...)
		}
	}
	for i, s := range set {
		if !used[i] {
			out = append(out, s...)
		}
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// SetCollectionOptions is CollMod of options alone.
func (e *Engine) SetCollectionOptions(ns Namespace, set []bsoncore.Element) error {
	_, err := e.CollMod(ns, set, nil)
	return err
}
