package engine

import (
	"bytes"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

// This file holds the DDL a multi-document transaction may run, as
// MongoDB 4.4+ allows it: creating a collection, explicitly or by
// createIndexes, and creating indexes on a collection the same
// transaction created while it is empty ("Creation commits with the
// transaction", txn.go). Everything else MongoDB refuses in a transaction
// (indexes on an existing collection, other DDL) stays refused.

// CreateCollectionIn creates ns inside transaction t. As CreateCollection,
// a collection that exists (as t sees it) with the same options is
// success, with others NamespaceExists. Cairn creates only collections
// without options in a transaction (capped and time series ones MongoDB
// refuses too; the rest carry caches the commit would have to install).
func (e *Engine) CreateCollectionIn(t *Txn, ns Namespace, options bson.Raw) error {
	if err := refuseInTransaction(ns); err != nil {
		return err
	}
	if err := catalog.ValidateUserCollectionName(ns.DB, ns.Coll); err != nil {
		return err
	}
	if len(emptyIfNil(options)) > len(emptyDoc) {
		return mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Cannot create collection %s with options in a multi-document transaction: Cairn creates only collections without options in a transaction", ns)
	}
	return e.write(t, ns, func(tx *storage.Txn) error {
		if c := t.collection(ns); c != nil {
			if bytes.Equal(emptyIfNil(c.Options), emptyIfNil(options)) {
				return nil
			}
			return mongoerr.New(mongoerr.NamespaceExists, "namespace %s already exists, but with different options", ns)
		}
		if t.cat.View(ns.DB, ns.Coll) != nil || e.cat.Working().View(ns.DB, ns.Coll) != nil {
			return mongoerr.New(mongoerr.NamespaceExists, "Namespace %s already exists", ns)
		}
		_, err := e.createInTxn(tx, ns, options)
		return err
	})
}

// CreateIndexesIn adds indexes to ns inside transaction t, as MongoDB's
// createIndexes in a transaction: on a missing collection (created, in
// the transaction) or one the transaction created and has not written to
// yet; an existing collection only answers "all indexes already exist";
// otherwise OperationNotSupportedInTransaction.
func (e *Engine) CreateIndexesIn(t *Txn, ns Namespace, specs []bsoncore.Document) (CreateIndexesResult, error) {
	parsed, err := parseIndexSpecs(t.collection(ns), specs)
	if err != nil {
		return CreateIndexesResult{}, err
	}
	var res CreateIndexesResult
	err = e.write(t, ns, func(tx *storage.Txn) error {
		res = CreateIndexesResult{CreatedCollection: true} // as MongoDB replies on a new collection
		coll := t.collection(ns)
		switch {
		case coll != nil && t.created[ns] == nil:
			for _, spec := range parsed {
				isNew, err := e.checkIndexConflict(coll, spec)
				if err != nil {
					return err
				}
				if isNew {
					return mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Cannot create new indexes on existing collection %s in a multi-document transaction.", ns)
				}
			}
			res = CreateIndexesResult{Before: 1 + len(coll.Indexes), After: 1 + len(coll.Indexes), AllExisted: true}
			return nil
		case coll == nil:
			if t.cat.View(ns.DB, ns.Coll) != nil || e.cat.Working().View(ns.DB, ns.Coll) != nil {
				return mongoerr.New(mongoerr.CommandNotSupportedOnView, "Cannot create indexes on a view: %s", ns)
			}
			var err error
			if coll, err = e.createInTxn(tx, ns, nil); err != nil {
				return err
			}
		}
		res.Before = 1 + len(coll.Indexes)
		for _, spec := range parsed {
			isNew, err := e.checkIndexConflict(coll, spec)
			if err != nil {
				return err
			}
			if !isNew {
				continue
			}
			empty, err := collectionEmpty(tx, coll)
			if err != nil {
				return err
			}
			if !empty {
				return mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Cannot create new indexes on non-empty collection %s in a multi-document transaction.", ns)
			}
			ix := catalog.Index{ID: e.cat.NewIndexID(e.txn.outer), Name: spec.Name, Key: bson.Raw(spec.Key), Spec: bson.Raw(spec.Original), TypeBits: newIndexTypeBits}
			coll = withIndex(coll, ix)
			t.setCreated(tx, ns, coll)
			t.addChange(tx, 'c', Namespace{DB: ns.DB, Coll: "$cmd"}, coll.UUID.Data, cmdDoc("createIndexes", strVal(ns.Coll), bsoncore.Document(spec.Original)), bsoncore.Value{})
		}
		res.After = 1 + len(coll.Indexes)
		res.AllExisted = res.After == res.Before
		return nil
	})
	if err != nil {
		return CreateIndexesResult{}, err
	}
	return res, nil
}

// withIndex is a copy of coll with ix in place of its index of the same
// name, or added.
func withIndex(coll *catalog.Collection, ix catalog.Index) *catalog.Collection {
	next := *coll
	next.Indexes = make([]catalog.Index, 0, len(coll.Indexes)+1)
	found := false
	for _, cur := range coll.Indexes {
		if cur.Name == ix.Name {
			cur, found = ix, true
		}
		next.Indexes = append(next.Indexes, cur)
	}
	if !found {
		next.Indexes = append(next.Indexes, ix)
	}
	return &next
}
