package cairn

import (
	"context"
	"errors"
	"reflect"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn/internal/engine"
)

// Cursor iterates the results of Find. Current holds the document after a
// successful Next; it is a copy the caller may keep.
type Cursor struct {
	Current bson.Raw

	it      *engine.DocIter
	pending []bson.Raw
	err     error
}

// Next moves to the next document; it returns false at the end, on error
// (see Err) or when ctx is done.
func (c *Cursor) Next(ctx context.Context) bool {
	if c.err != nil {
		return false
	}
	if err := ctx.Err(); err != nil {
		c.err = err
		return false
	}
	if len(c.pending) > 0 {
		c.Current, c.pending = c.pending[0], c.pending[1:]
		return true
	}
	if c.it == nil || !c.it.Next() {
		if c.it != nil {
			c.err = c.it.Err()
		}
		return false
	}
	c.Current = append(bson.Raw(nil), c.it.Doc()...)
	return true
}

// Decode unmarshals Current into v.
func (c *Cursor) Decode(v any) error { return bson.Unmarshal(c.Current, v) }

// Err reports the error that ended iteration, if any.
func (c *Cursor) Err() error { return c.err }

// Close releases the cursor's resources.
func (c *Cursor) Close(context.Context) error {
	if c.it == nil {
		return nil
	}
	err := c.it.Close()
	c.it = nil
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
