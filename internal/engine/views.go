package engine

import (
	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

// CreateView defines the view v (its ID "db.name"). The name follows the
// rules of collection names, and the view graph must stay acyclic and
// within catalog.MaxViewDepth, checked against the catalog the write
// changes. As for collections, creating a view that exists with the same
// definition succeeds.
func (e *Engine) CreateView(v catalog.View) error {
	db, name := v.DB(), v.Name()
	if err := checkViewName(db, name); err != nil {
		return err
	}
	return e.db.Write(func(tx *storage.Txn) error {
		st := e.cat.Working()
		if old := st.View(db, name); old != nil {
			if old.ViewOn == v.ViewOn && string(old.Pipeline) == string(v.Pipeline) && string(old.Collation) == string(v.Collation) {
				return nil
			}
			return mongoerr.New(mongoerr.NamespaceExists, "namespace %s already exists, but with different options", v.ID)
		}
		if err := st.CheckViews(&v); err != nil {
			return err
		}
		return e.cat.CreateView(tx, v)
	})
}

// checkViewName applies MongoDB's rules for a view's name: those of a
// user collection, and never system.views itself.
func checkViewName(db, name string) error {
	if name == "system.views" {
		return mongoerr.New(mongoerr.InvalidNamespace, "Cannot create a view called '%s.%s'", db, name)
	}
	return catalog.ValidateUserCollectionName(db, name)
}

// ModifyView replaces a view's definition (collMod with viewOn and
// pipeline), with the same graph checks as CreateView. The view keeps its
// collation.
func (e *Engine) ModifyView(v catalog.View) error {
	return e.db.Write(func(tx *storage.Txn) error {
		st := e.cat.Working()
		old := st.View(v.DB(), v.Name())
		if old == nil {
			return mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist: %s", v.ID)
		}
		v.Collation = old.Collation
		if err := st.CheckViews(&v); err != nil {
			return err
		}
		return e.cat.ModifyView(tx, v)
	})
}

// viewError is MongoDB's refusal of a command that needs a collection on a
// view's namespace.
func viewError(ns Namespace) error {
	return mongoerr.New(mongoerr.CommandNotSupportedOnView, "Namespace %s is a view, not a collection", ns)
}

// NotView returns CommandNotSupportedOnView when ns is a view in the
// current catalog.
func (e *Engine) NotView(ns Namespace) error {
	if e.cat.Current().View(ns.DB, ns.Coll) != nil {
		return viewError(ns)
	}
	return nil
}
