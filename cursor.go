package cairn

import (
	"context"
	"errors"
	"reflect"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Cursor iterates the results of Find, fetching batches as needed. Current
// holds the document after a successful Next; it is a copy the caller may keep.
type Cursor struct {
	Current bson.Raw

	coll      *Collection
	id        int64
	batch     []bson.RawValue
	batchSize int32
	err       error
}

func newCursor(c *Collection, reply bson.Raw, batchSize int32) (*Cursor, error) {
	cur := &Cursor{coll: c, batchSize: batchSize}
	cur.load(reply, "firstBatch")
	return cur, nil
}

// load takes a batch and the cursor id from a find or getMore reply.
func (c *Cursor) load(reply bson.Raw, field string) {
	cd := reply.Lookup("cursor").Document()
	c.id, _ = cd.Lookup("id").AsInt64OK()
	if arr, ok := cd.Lookup(field).ArrayOK(); ok {
		c.batch, _ = arr.Values()
	}
}

// Next moves to the next document; it returns false at the end, on error
// (see Err) or when ctx is done.
func (c *Cursor) Next(ctx context.Context) bool {
	for len(c.batch) == 0 {
		if c.err != nil || c.id == 0 {
			return false
		}
		if err := c.getMore(ctx); err != nil {
			c.err = err
			return false
		}
	}
	c.Current = append(bson.Raw(nil), c.batch[0].Document()...)
	c.batch = c.batch[1:]
	return true
}

func (c *Cursor) getMore(ctx context.Context) error {
	cmd := bson.D{{Key: "getMore", Value: c.id}, {Key: "collection", Value: c.coll.name}}
	if c.batchSize > 0 {
		cmd = append(cmd, bson.E{Key: "batchSize", Value: c.batchSize})
	}
	reply, err := c.coll.run(ctx, cmd)
	if err != nil {
		return err
	}
	c.load(reply, "nextBatch")
	return nil
}

// Decode unmarshals Current into v.
func (c *Cursor) Decode(v any) error { return bson.Unmarshal(c.Current, v) }

// Err reports the error that ended iteration, if any.
func (c *Cursor) Err() error { return c.err }

// Close releases the cursor's server-side state.
func (c *Cursor) Close(ctx context.Context) error {
	if c.id == 0 {
		return nil
	}
	id := c.id
	c.id, c.batch = 0, nil
	_, err := c.coll.run(context.WithoutCancel(ctx), bson.D{{Key: "killCursors", Value: c.coll.name}, {Key: "cursors", Value: bson.A{id}}})
	return err
}

// All decodes every remaining document into results, a pointer to a slice,
// and closes the cursor.
func (c *Cursor) All(ctx context.Context, results any) error {
	defer c.Close(ctx)
	rv := reflect.ValueOf(results)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Slice {
		return errors.New("cairn: All needs a pointer to a slice")
	}
	slice := rv.Elem()
	slice.SetLen(0)
	for c.Next(ctx) {
		elem := reflect.New(slice.Type().Elem())
		if err := c.Decode(elem.Interface()); err != nil {
			return err
		}
		slice.Set(reflect.Append(slice, elem.Elem()))
	}
	return c.Err()
}
