package cairn

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
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
	return &Collection{db: d, name: name}
}

// RunCommand runs a command against this database.
func (d *Database) RunCommand(ctx context.Context, cmd any) (bson.Raw, error) {
	return d.db.RunCommand(ctx, d.name, cmd)
}

// CreateCollection creates a collection explicitly. opts holds MongoDB create
// options such as {idGenerator: "sequential"} (nil for none); creating an
// existing collection with the same options succeeds.
func (d *Database) CreateCollection(ctx context.Context, name string, opts any) error {
	cmd := bson.D{{Key: "create", Value: name}}
	if opts != nil {
		raw, err := marshalDoc(opts)
		if err != nil {
			return err
		}
		elems, err := bson.Raw(raw).Elements()
		if err != nil {
			return err
		}
		for _, el := range elems {
			cmd = append(cmd, bson.E{Key: el.Key(), Value: el.Value()})
		}
	}
	_, err := d.RunCommand(ctx, cmd)
	return err
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
	_, err := d.RunCommand(ctx, bson.D{{Key: "dropDatabase", Value: 1}})
	return err
}
