package cairn

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn/internal/engine"
)

// Database is a handle to one database.
type Database struct {
	db   *DB
	name string
}

// Name is the database's name.
func (d *Database) Name() string { return d.name }

// Collection returns a handle to the named collection; it is created by the
// first insert or by CreateCollection.
func (d *Database) Collection(name string) *Collection {
	return &Collection{db: d, ns: engine.Namespace{DB: d.name, Coll: name}}
}

// CreateCollection creates a collection explicitly. opts holds MongoDB create
// options (nil for none); creating an existing collection with the same
// options succeeds.
func (d *Database) CreateCollection(ctx context.Context, name string, opts any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var raw bson.Raw
	if opts != nil {
		b, err := bson.Marshal(opts)
		if err != nil {
			return err
		}
		raw = b
	}
	return d.db.eng.CreateCollection(engine.Namespace{DB: d.name, Coll: name}, raw)
}

// ListCollectionNames lists the database's collections, sorted.
func (d *Database) ListCollectionNames(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var names []string
	for _, c := range d.db.eng.Catalog().Collections(d.name) {
		names = append(names, c.Name)
	}
	return names, nil
}

// Drop drops the database and all its collections.
func (d *Database) Drop(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := d.db.eng.DropDatabase(d.name)
	return err
}
