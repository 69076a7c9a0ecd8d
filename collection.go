package cairn

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Collection is a handle to one collection. Documents, filters and updates
// are anything the official driver's bson package marshals: bson.D, bson.M,
// structs, bson.Raw.
type Collection struct {
	db   *Database
	name string
}

// Name is the collection's name.
func (c *Collection) Name() string { return c.name }

// Database is the collection's database.
func (c *Collection) Database() *Database { return c.db }

func (c *Collection) run(ctx context.Context, cmd bson.D) (bson.Raw, error) {
	return c.db.RunCommand(ctx, cmd)
}

// InsertOneResult reports the _id of the inserted document.
type InsertOneResult struct {
	// InsertedID is the document's _id, made by the database when the
	// document had none.
	InsertedID any
}

// InsertManyResult reports the _ids of the inserted documents, in order.
type InsertManyResult struct {
	InsertedIDs []any
}

// InsertOne inserts one document.
func (c *Collection) InsertOne(ctx context.Context, doc any) (*InsertOneResult, error) {
	res, err := c.InsertMany(ctx, []any{doc})
	if res == nil || len(res.InsertedIDs) == 0 {
		return nil, err
	}
	return &InsertOneResult{InsertedID: res.InsertedIDs[0]}, err
}

// InsertMany inserts docs in order, in one durable commit. It stops at the
// first document that fails (a duplicate _id, say), as an ordered MongoDB
// insert does; the documents before it stay inserted and are reported.
func (c *Collection) InsertMany(ctx context.Context, docs []any) (*InsertManyResult, error) {
	raws := make(bson.A, len(docs))
	for i, d := range docs {
		b, err := marshalDoc(d)
		if err != nil {
			return nil, err
		}
		raws[i] = bson.Raw(b)
	}
	reply, err := c.run(ctx, bson.D{{Key: "insert", Value: c.name}, {Key: "documents", Value: raws}})
	if err != nil {
		return nil, err
	}
	n, _ := reply.Lookup("n").AsInt64OK()
	generated := map[int64]bson.RawValue{}
	if arr, ok := reply.Lookup("generatedIds").ArrayOK(); ok {
		vals, _ := arr.Values()
		for _, v := range vals {
			idx, _ := v.Document().Lookup("index").AsInt64OK()
			generated[idx] = v.Document().Lookup("_id")
		}
	}
	ids := make([]any, n)
	for i := range ids {
		if g, ok := generated[int64(i)]; ok {
			ids[i] = toAny(g)
		} else {
			ids[i] = toAny(bson.Raw(raws[i].(bson.Raw)).Lookup("_id"))
		}
	}
	return &InsertManyResult{InsertedIDs: ids}, writeErrorsOf(reply)
}

// FindOptions shape a Find; the zero value returns everything in _id order.
type FindOptions struct {
	Sort       any   // e.g. bson.D{{"age", -1}}
	Projection any   // e.g. bson.D{{"name", 1}}
	Skip       int64 // documents to skip
	Limit      int64 // at most this many (0: no limit)
	BatchSize  int32 // documents per batch (0: the server's default)
}

// Find returns a cursor over the documents filter selects.
func (c *Collection) Find(ctx context.Context, filter any, opts ...*FindOptions) (*Cursor, error) {
	cmd, err := c.findCommand(filter, opts)
	if err != nil {
		return nil, err
	}
	reply, err := c.run(ctx, cmd)
	if err != nil {
		return nil, err
	}
	return newCursor(c, reply, batchSizeOf(opts))
}

func (c *Collection) findCommand(filter any, opts []*FindOptions) (bson.D, error) {
	f, err := marshalDoc(filter)
	if err != nil {
		return nil, err
	}
	cmd := bson.D{{Key: "find", Value: c.name}, {Key: "filter", Value: bson.Raw(f)}}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if o.Sort != nil {
			cmd = append(cmd, bson.E{Key: "sort", Value: o.Sort})
		}
		if o.Projection != nil {
			cmd = append(cmd, bson.E{Key: "projection", Value: o.Projection})
		}
		if o.Skip != 0 {
			cmd = append(cmd, bson.E{Key: "skip", Value: o.Skip})
		}
		switch {
		case o.Limit > 0:
			cmd = append(cmd, bson.E{Key: "limit", Value: o.Limit})
		case o.Limit < 0:
			// As drivers do: a negative limit is one batch of |limit|
			// (the find command itself refuses a negative limit).
			cmd = append(cmd, bson.E{Key: "limit", Value: -o.Limit}, bson.E{Key: "singleBatch", Value: true})
		}
		if o.BatchSize != 0 {
			cmd = append(cmd, bson.E{Key: "batchSize", Value: o.BatchSize})
		}
	}
	return cmd, nil
}

func batchSizeOf(opts []*FindOptions) int32 {
	for _, o := range opts {
		if o != nil && o.BatchSize != 0 {
			return o.BatchSize
		}
	}
	return 0
}

// SingleResult is the outcome of FindOne and the FindOneAnd… methods.
type SingleResult struct {
	doc bson.Raw
	err error
}

// Err is ErrNoDocuments when nothing matched, or the error of the operation.
func (r *SingleResult) Err() error { return r.err }

// Decode unmarshals the document into v.
func (r *SingleResult) Decode(v any) error {
	if r.err != nil {
		return r.err
	}
	return bson.Unmarshal(r.doc, v)
}

// Raw is the document's BSON.
func (r *SingleResult) Raw() (bson.Raw, error) { return r.doc, r.err }

// FindOne returns the first document filter selects (in _id order, or in
// the order of opts' Sort).
func (c *Collection) FindOne(ctx context.Context, filter any, opts ...*FindOptions) *SingleResult {
	one := &FindOptions{Limit: -1}
	for _, o := range opts {
		if o != nil {
			one.Sort, one.Projection, one.Skip = o.Sort, o.Projection, o.Skip
		}
	}
	cur, err := c.Find(ctx, filter, one)
	if err != nil {
		return &SingleResult{err: err}
	}
	defer cur.Close(ctx)
	if !cur.Next(ctx) {
		if err := cur.Err(); err != nil {
			return &SingleResult{err: err}
		}
		return &SingleResult{err: ErrNoDocuments}
	}
	return &SingleResult{doc: cur.Current}
}

// CountDocuments counts the documents filter selects.
func (c *Collection) CountDocuments(ctx context.Context, filter any) (int64, error) {
	f, err := marshalDoc(filter)
	if err != nil {
		return 0, err
	}
	reply, err := c.run(ctx, bson.D{{Key: "count", Value: c.name}, {Key: "query", Value: bson.Raw(f)}})
	if err != nil {
		return 0, err
	}
	n, _ := reply.Lookup("n").AsInt64OK()
	return n, nil
}

// Distinct returns the distinct values of field among the documents filter selects.
func (c *Collection) Distinct(ctx context.Context, field string, filter any) ([]any, error) {
	f, err := marshalDoc(filter)
	if err != nil {
		return nil, err
	}
	reply, err := c.run(ctx, bson.D{{Key: "distinct", Value: c.name}, {Key: "key", Value: field}, {Key: "query", Value: bson.Raw(f)}})
	if err != nil {
		return nil, err
	}
	vals, _ := reply.Lookup("values").Array().Values()
	out := make([]any, len(vals))
	for i, v := range vals {
		out[i] = toAny(v)
	}
	return out, nil
}

// UpdateResult reports what an update or replacement did.
type UpdateResult struct {
	MatchedCount  int64
	ModifiedCount int64
	UpsertedCount int64
	UpsertedID    any
}

// UpdateOptions shape an update.
type UpdateOptions struct {
	Upsert       bool
	ArrayFilters []any
}

// ReplaceOne replaces the first document filter selects with replacement,
// which may omit _id but may not change it.
func (c *Collection) ReplaceOne(ctx context.Context, filter, replacement any, opts ...*UpdateOptions) (*UpdateResult, error) {
	return c.update(ctx, filter, replacement, false, opts)
}

// UpdateOne applies update (operators such as $set) to the first document
// filter selects.
func (c *Collection) UpdateOne(ctx context.Context, filter, update any, opts ...*UpdateOptions) (*UpdateResult, error) {
	return c.update(ctx, filter, update, false, opts)
}

// UpdateMany applies update to every document filter selects.
func (c *Collection) UpdateMany(ctx context.Context, filter, update any, opts ...*UpdateOptions) (*UpdateResult, error) {
	return c.update(ctx, filter, update, true, opts)
}

func (c *Collection) update(ctx context.Context, filter, update any, multi bool, opts []*UpdateOptions) (*UpdateResult, error) {
	f, err := marshalDoc(filter)
	if err != nil {
		return nil, err
	}
	stmt := bson.D{{Key: "q", Value: bson.Raw(f)}}
	switch u := update.(type) {
	case bson.A, []any:
		stmt = append(stmt, bson.E{Key: "u", Value: u})
	default:
		raw, err := marshalDoc(update)
		if err != nil {
			return nil, err
		}
		stmt = append(stmt, bson.E{Key: "u", Value: bson.Raw(raw)})
	}
	stmt = append(stmt, bson.E{Key: "multi", Value: multi})
	for _, o := range opts {
		if o == nil {
			continue
		}
		stmt = append(stmt, bson.E{Key: "upsert", Value: o.Upsert})
		if o.ArrayFilters != nil {
			stmt = append(stmt, bson.E{Key: "arrayFilters", Value: o.ArrayFilters})
		}
	}
	reply, err := c.run(ctx, bson.D{{Key: "update", Value: c.name}, {Key: "updates", Value: bson.A{stmt}}})
	if err != nil {
		return nil, err
	}
	if err := writeErrorsOf(reply); err != nil {
		return &UpdateResult{}, err
	}
	n, _ := reply.Lookup("n").AsInt64OK()
	mod, _ := reply.Lookup("nModified").AsInt64OK()
	res := &UpdateResult{MatchedCount: n, ModifiedCount: mod}
	if arr, ok := reply.Lookup("upserted").ArrayOK(); ok {
		vals, _ := arr.Values()
		if len(vals) > 0 {
			res.MatchedCount--
			res.UpsertedCount = 1
			res.UpsertedID = toAny(vals[0].Document().Lookup("_id"))
		}
	}
	return res, nil
}

// DeleteResult reports how many documents a delete removed.
type DeleteResult struct {
	DeletedCount int64
}

// DeleteOne deletes the first document filter selects.
func (c *Collection) DeleteOne(ctx context.Context, filter any) (*DeleteResult, error) {
	return c.delete(ctx, filter, 1)
}

// DeleteMany deletes every document filter selects.
func (c *Collection) DeleteMany(ctx context.Context, filter any) (*DeleteResult, error) {
	return c.delete(ctx, filter, 0)
}

func (c *Collection) delete(ctx context.Context, filter any, limit int) (*DeleteResult, error) {
	f, err := marshalDoc(filter)
	if err != nil {
		return nil, err
	}
	reply, err := c.run(ctx, bson.D{{Key: "delete", Value: c.name}, {Key: "deletes", Value: bson.A{
		bson.D{{Key: "q", Value: bson.Raw(f)}, {Key: "limit", Value: limit}},
	}}})
	if err != nil {
		return nil, err
	}
	n, _ := reply.Lookup("n").AsInt64OK()
	return &DeleteResult{DeletedCount: n}, writeErrorsOf(reply)
}

// FindOneAndDelete deletes the first document filter selects and returns it.
func (c *Collection) FindOneAndDelete(ctx context.Context, filter any) *SingleResult {
	return c.findAndModify(ctx, filter, bson.E{Key: "remove", Value: true})
}

// FindOneAndReplace replaces the first document filter selects and returns
// the document as it was (returnNew false) or as it became.
func (c *Collection) FindOneAndReplace(ctx context.Context, filter, replacement any, returnNew bool) *SingleResult {
	raw, err := marshalDoc(replacement)
	if err != nil {
		return &SingleResult{err: err}
	}
	return c.findAndModify(ctx, filter, bson.E{Key: "update", Value: bson.Raw(raw)}, bson.E{Key: "new", Value: returnNew})
}

// FindOneAndUpdate applies update to the first document filter selects and
// returns the document as it was (returnNew false) or as it became.
func (c *Collection) FindOneAndUpdate(ctx context.Context, filter, update any, returnNew bool) *SingleResult {
	raw, err := marshalDoc(update)
	if err != nil {
		return &SingleResult{err: err}
	}
	return c.findAndModify(ctx, filter, bson.E{Key: "update", Value: bson.Raw(raw)}, bson.E{Key: "new", Value: returnNew})
}

func (c *Collection) findAndModify(ctx context.Context, filter any, args ...bson.E) *SingleResult {
	f, err := marshalDoc(filter)
	if err != nil {
		return &SingleResult{err: err}
	}
	cmd := append(bson.D{{Key: "findAndModify", Value: c.name}, {Key: "query", Value: bson.Raw(f)}}, args...)
	reply, err := c.run(ctx, cmd)
	if err != nil {
		return &SingleResult{err: err}
	}
	v := reply.Lookup("value")
	if v.Type != bson.TypeEmbeddedDocument {
		return &SingleResult{err: ErrNoDocuments}
	}
	return &SingleResult{doc: append(bson.Raw(nil), v.Document()...)}
}

// Drop drops the collection; dropping a missing collection is not an error.
func (c *Collection) Drop(ctx context.Context) error {
	_, err := c.run(ctx, bson.D{{Key: "drop", Value: c.name}})
	return err
}
