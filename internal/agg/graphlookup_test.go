package agg_test

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// TestGraphLookupNeedsID checks MongoDB's 40271: a document the search
// finds must have an _id, which de-duplicates it. Stored documents always
// have one, so the corpus (which also runs over the wire) cannot show it.
func TestGraphLookupNeedsID(t *testing.T) {
	withID := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).AppendInt32("n", 1).Build()
	noID := bsoncore.NewDocumentBuilder().AppendInt32("n", 1).Build()
	stage := bsoncore.NewDocumentBuilder().AppendDocument("$graphLookup", bsoncore.NewDocumentBuilder().
		AppendString("from", "t").AppendString("startWith", "$n").AppendString("connectFromField", "n").
		AppendString("connectToField", "n").AppendString("as", "r").Build()).Build()
	for _, tc := range []struct {
		name    string
		foreign bsoncore.Document
		code    mongoerr.Code
	}{{"an _id", withID, 0}, {"no _id", noID, mongoerr.GraphLookupNoID}} {
		p, err := agg.Parse([]bsoncore.Document{stage}, agg.Options{Catalog: mapCatalog{"t": {tc.foreign}}})
		if err != nil {
			t.Fatal(err)
		}
		out, err := p.Run(context.Background(), agg.SliceSource([]bsoncore.Document{withID}))
		if err == nil {
			_, err = agg.ReadAll(out)
		}
		if got := mongoerr.CodeOf(err); got != tc.code {
			t.Errorf("foreign document with %s: %v (code %d), want code %d", tc.name, err, got, tc.code)
		}
	}
}
