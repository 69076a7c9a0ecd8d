package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/engine"
)

// FindIn serves $lookup's per-document equality match through an index on
// the foreign field (agg.IndexCatalog): the filter {path: {$in: vals}} goes
// to the planner like a find's, and only an index plan is taken; a
// collection scan per input document would be slower than $lookup's own
// read-once fallback, so it reports ok false instead.
func (c aggCatalog) FindIn(ctx context.Context, db, coll, path string, vals []bsoncore.Value) (agg.Source, bool, error) {
	in := bsoncore.NewArrayBuilder()
	for _, v := range vals {
		in.AppendValue(v)
	}
	filter := bsoncore.NewDocumentBuilder().
		AppendDocument(path, bsoncore.NewDocumentBuilder().AppendArray("$in", in.Build()).Build()).
		Build()
	sel, err := newSelection(engine.Namespace{DB: db, Coll: coll}, filter)
	if err != nil {
		return nil, false, err
	}
	ex, err := sel.prepare(ctx, c.eng, false)
	if err != nil {
		return nil, false, err
	}
	if ex.ScansCollection() {
		_ = ex.Close()
		return nil, false, nil
	}
	return ex, true, nil
}

var _ agg.IndexCatalog = aggCatalog{}
