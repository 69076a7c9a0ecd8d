package engine

import (
	"bytes"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

// CreateIndexesResult reports what CreateIndexes did, as createIndexes
// replies it.
type CreateIndexesResult struct {
	Before, After     int // index counts, the _id index included
	CreatedCollection bool
	AllExisted        bool
}

// CreateIndexes adds the indexes specs describes to ns (creating the
// collection if needed) and fills them from the existing documents, all in
// one commit: if any document violates a new unique index, nothing is left
// behind. An index identical to an existing one is skipped.
//
// The build runs inside the commit pipeline, so writers wait for it while
// readers do not (they read snapshots); a background build is a follow-up.
func (e *Engine) CreateIndexes(ns Namespace, specs []bsoncore.Document) (CreateIndexesResult, error) {
	parsed := make([]*index.Spec, len(specs))
	for i, raw := range specs {
		// The catalog keeps the spec for the index's lifetime, while the
		// caller's bytes may alias a connection buffer: parse a copy.
		s, err := index.ParseSpec(append(bsoncore.Document(nil), raw...))
		if err != nil {
			return CreateIndexesResult{}, err
		}
		parsed[i] = s
	}
	var res CreateIndexesResult
	err := e.db.Write(func(tx *storage.Txn) error {
		res = CreateIndexesResult{}
		existed := e.cat.Working().Collection(ns.DB, ns.Coll) != nil
		coll, err := e.ensureCollection(tx, ns)
		if err != nil {
			return err
		}
		res.CreatedCollection = !existed
		res.Before = 1 + len(coll.Indexes)
		added := 0
		for _, spec := range parsed {
			isNew, err := e.checkIndexConflict(ns, spec)
			if err != nil {
				return err
			}
			if !isNew {
				continue
			}
			ix, err := e.cat.AddIndex(tx, ns.DB, ns.Coll, catalog.Index{Name: spec.Name, Key: bson.Raw(spec.Key), Spec: bson.Raw(spec.Original)})
			if err != nil {
				return err
			}
			if err := e.buildIndex(tx, ns, ix); err != nil {
				return err
			}
			added++
		}
		res.After = res.Before + added
		res.AllExisted = added == 0
		return nil
	})
	return res, err
}

// checkIndexConflict reports whether spec names a new index of ns, or
// MongoDB's error when it clashes with an existing one.
func (e *Engine) checkIndexConflict(ns Namespace, spec *index.Spec) (bool, error) {
	if spec.IsID() {
		return false, nil // the _id index always exists
	}
	coll := e.cat.Working().Collection(ns.DB, ns.Coll)
	for _, ix := range coll.Indexes {
		sameKey := bytes.Equal(ix.Key, spec.Key)
		switch {
		case ix.Name == spec.Name && sameKey:
			existing, err := e.specs.get(ix)
			if err != nil {
				return false, err
			}
			if !bytes.Equal(existing.Doc(), spec.Doc()) {
				return false, mongoerr.New(mongoerr.IndexOptionsConflict, "An existing index has the same name as the requested index. When index names are not specified, they are auto generated and can cause conflicts. Please refer to our documentation. Requested index: %s, existing index: %s", bson.Raw(spec.Doc()), bson.Raw(existing.Doc()))
			}
			return false, nil
		case ix.Name == spec.Name:
			return false, mongoerr.New(mongoerr.IndexKeySpecsConflict, "An existing index has the same name as the requested index. Requested index: %s, existing index key: %s", bson.Raw(spec.Doc()), ix.Key)
		case sameKey:
			existing, err := e.specs.get(ix)
			if err != nil {
				return false, err
			}
			if existing.Unique == spec.Unique && existing.Sparse == spec.Sparse && bytes.Equal(existing.PartialFilterExpression, spec.PartialFilterExpression) {
				return false, mongoerr.New(mongoerr.IndexOptionsConflict, "Index already exists with a different name: %s", ix.Name)
			}
		}
	}
	return true, nil
}

// buildIndex fills ix from every document of ns, inside tx.
func (e *Engine) buildIndex(tx *storage.Txn, ns Namespace, ix catalog.Index) error {
	coll := e.cat.Working().Collection(ns.DB, ns.Coll)
	prefix := storage.Prefix(nil, storage.SpaceDocument, coll.ID)
	it, err := tx.NewIter(prefix, storage.PrefixEnd(prefix))
	if err != nil {
		return err
	}
	defer it.Close()
	one := &catalog.Collection{ID: coll.ID, DB: coll.DB, Name: coll.Name, Indexes: []catalog.Index{ix}}
	multikey := false
	for ok := it.First(); ok; ok = it.Next() {
		doc, err := it.Value()
		if err != nil {
			return err
		}
		idKey := append([]byte(nil), it.Key()[len(prefix):]...)
		entries, mk, err := e.entriesOf(one, doc, idKey)
		if err != nil {
			return err
		}
		if err := e.addEntries(tx, ns, entries, idKey); err != nil {
			return err
		}
		multikey = multikey || len(mk) > 0
	}
	if err := it.Close(); err != nil {
		return err
	}
	if multikey {
		ix.Multikey = true
		return e.cat.UpdateIndex(tx, ns.DB, ns.Coll, ix)
	}
	return nil
}

// DropIndexes drops the named indexes of ns ("*" drops every secondary
// index); it returns how many indexes there were, _id included.
func (e *Engine) DropIndexes(ns Namespace, names []string) (was int, err error) {
	err = e.db.Write(func(tx *storage.Txn) error {
		coll := e.cat.Working().Collection(ns.DB, ns.Coll)
		if coll == nil {
			return mongoerr.New(mongoerr.NamespaceNotFound, "ns not found %s", ns)
		}
		was = 1 + len(coll.Indexes)
		if len(names) == 1 && names[0] == "*" {
			names = names[:0]
			for _, ix := range coll.Indexes {
				names = append(names, ix.Name)
			}
		}
		for _, name := range names {
			if name == catalog.IDIndexName {
				return mongoerr.New(mongoerr.InvalidOptions, "cannot drop _id index")
			}
			if err := e.cat.DropIndex(tx, ns.DB, ns.Coll, name); err != nil {
				return err
			}
		}
		return nil
	})
	return was, err
}

// IndexSpecs lists ns's secondary index specifications as listIndexes shows them.
func (e *Engine) IndexSpecs(ns Namespace) ([]bsoncore.Document, error) {
	coll := e.cat.Current().Collection(ns.DB, ns.Coll)
	if coll == nil {
		return nil, nil
	}
	out := make([]bsoncore.Document, 0, len(coll.Indexes))
	for _, ix := range coll.Indexes {
		s, err := e.specs.get(ix)
		if err != nil {
			return nil, err
		}
		out = append(out, s.Doc())
	}
	return out, nil
}
