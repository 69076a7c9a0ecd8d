package engine

import (
	"bytes"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
	"github.com/cairndb/cairn/internal/validation"
)

// CreateCollection creates ns with options. As since MongoDB 7.0, creating a
// collection that exists with the same options succeeds; different options
// fail with NamespaceExists.
func (e *Engine) CreateCollection(ns Namespace, options bson.Raw) error {
	if ns.Coll != ProfileCollection { // may be created first, capped at another size
		if err := catalog.ValidateUserCollectionName(ns.DB, ns.Coll); err != nil {
			return err
		}
	}
	if err := validateCreateOptions(options); err != nil {
		return err
	}
	if err := validation.CheckOptions("create", ns.DB, ns.Coll, options); err != nil {
		return err
	}
	_, capped := CappedOf(&catalog.Collection{Options: options})
	if err := checkVersioningChange("create", nil, options, capped); err != nil {
		return err
	}
	return e.db.Write(func(tx *storage.Txn) error {
		if c := e.cat.Working().Collection(ns.DB, ns.Coll); c != nil {
			if bytes.Equal(emptyIfNil(c.Options), emptyIfNil(options)) {
				return nil
			}
			return mongoerr.New(mongoerr.NamespaceExists, "namespace %s already exists, but with different options", ns)
		}
		c, err := e.cat.CreateCollection(tx, ns.DB, ns.Coll, options)
		if err == nil {
			e.logCommand(tx, ns.DB, c.UUID.Data, cmdDoc("create", strVal(ns.Coll), bsoncore.Document(options)))
		}
		return err
	})
}

var emptyDoc = bson.Raw{5, 0, 0, 0, 0}

func emptyIfNil(r bson.Raw) bson.Raw {
	if len(r) == 0 {
		return emptyDoc
	}
	return r
}

// DropCollection drops ns and reports whether it existed.
func (e *Engine) DropCollection(ns Namespace) (existed bool, err error) {
	if err := catalog.ValidateCollectionName(ns.DB, ns.Coll); err != nil {
		return false, err
	}
	if err := refuseOplogDDL(ns); err != nil {
		return false, err
	}
	err = e.db.Write(func(tx *storage.Txn) error {
		c := e.cat.Working().Collection(ns.DB, ns.Coll)
		existed = e.cat.DropCollection(tx, ns.DB, ns.Coll)
		if existed && c != nil {
			e.logCommand(tx, ns.DB, c.UUID.Data, cmdDoc("drop", strVal(ns.Coll), nil))
		}
		if !existed {
			if v := e.cat.Working().View(ns.DB, ns.Coll); v.IsTimeseries() {
				e.dropTimeseriesBuckets(tx, ns.DB, ns.Coll)
			}
			existed = e.cat.DropView(tx, ns.DB, ns.Coll)
		}
		return nil
	})
	return existed, err
}

// DropDatabase drops every collection of db; it reports how many there were.
func (e *Engine) DropDatabase(db string) (dropped int, err error) {
	if err := catalog.ValidateDBName(db); err != nil {
		return 0, err
	}
	if err := refuseOplogDDL(Namespace{DB: db}); err != nil {
		return 0, err
	}
	err = e.db.Write(func(tx *storage.Txn) error {
		dropped = e.cat.DropDatabase(tx, db)
		if dropped > 0 {
			e.logCommand(tx, db, nil, cmdDoc("dropDatabase", bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 1)}, nil))
		}
		return nil
	})
	return dropped, err
}

// RenameCollection renames from to to (across databases too); with
// dropTarget an existing target is dropped first, in the same commit.
func (e *Engine) RenameCollection(from, to Namespace, dropTarget bool) error {
	if err := catalog.ValidateCollectionName(from.DB, from.Coll); err != nil {
		return err
	}
	if err := catalog.ValidateUserCollectionName(to.DB, to.Coll); err != nil {
		return err
	}
	if err := refuseOplogDDL(from, to); err != nil {
		return err
	}
	return e.db.Write(func(tx *storage.Txn) error {
		c := e.cat.Working().Collection(from.DB, from.Coll)
		if err := e.cat.RenameCollection(tx, from.DB, from.Coll, to.DB, to.Coll, dropTarget); err != nil {
			return err
		}
		if c != nil {
			e.logCommand(tx, from.DB, c.UUID.Data, bsoncore.NewDocumentBuilder().
				AppendString("renameCollection", from.String()).AppendString("to", to.String()).
				AppendBoolean("dropTarget", dropTarget).Build())
		}
		return nil
	})
}

// ProfileCollection is the database profiler's collection in each
// database: its name is reserved, but CreateCollection makes it (the
// profiler, capped, or a user choosing its size first, as in MongoDB).
const ProfileCollection = "system.profile"

// ensureCollection returns ns's metadata inside a request, creating the
// collection implicitly (as an insert or upsert does) when it does not exist.
func (e *Engine) ensureCollection(tx *storage.Txn, ns Namespace) (*catalog.Collection, error) {
	if c := e.writeCollection(ns); c != nil {
		return c, nil
	}
	if e.cat.Working().View(ns.DB, ns.Coll) != nil {
		return nil, viewError(ns) // views are read-only
	}
	if e.txn.in != nil {
		return e.createInTxn(tx, ns, nil)
	}
	if err := catalog.ValidateUserCollectionName(ns.DB, ns.Coll); err != nil {
		return nil, err // system.profile too: the profiler creates it capped (CreateCollection)
	}
	c, err := e.cat.CreateCollection(tx, ns.DB, ns.Coll, nil)
	if err == nil {
		e.logCommand(tx, ns.DB, c.UUID.Data, cmdDoc("create", strVal(ns.Coll), nil))
	}
	return c, err
}
