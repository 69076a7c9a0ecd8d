package exec

import (
	"context"
	"log/slog"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// TestOutRefusesChangedTarget checks $out's last step: when the target's
// indexes or options changed while the pipeline ran, the rename is refused
// with CommandFailed, the target keeps its documents and the temporary
// collection is gone.
func TestOutRefusesChangedTarget(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(eng *engine.Engine, ns engine.Namespace) error
	}{
		{name: "index added", change: func(eng *engine.Engine, ns engine.Namespace) error {
			spec, _ := bson.Marshal(bson.D{{Key: "key", Value: bson.D{{Key: "b", Value: 1}}}, {Key: "name", Value: "b_1"}})
			_, err := eng.CreateIndexes(context.Background(), ns, []bsoncore.Document{spec})
			return err
		}},
		{name: "target dropped and recreated with options", change: func(eng *engine.Engine, ns engine.Namespace) error {
			if _, err := eng.DropCollection(ns); err != nil {
				return err
			}
			opts, _ := bson.Marshal(bson.D{{Key: "idGenerator", Value: "sequential"}})
			return eng.CreateCollection(ns, opts)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng, err := engine.Open(t.TempDir(), engine.Options{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer eng.Close()
			target := engine.Namespace{DB: "db", Coll: "dst"}
			old, _ := bson.Marshal(bson.D{{Key: "_id", Value: 1}})
			if _, err := eng.Insert(target, []bsoncore.Document{old}, true); err != nil {
				t.Fatal(err)
			}
			w, err := prepareOutput(eng, &agg.Output{Stage: "$out", DB: "db", Coll: "dst"})
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.change(eng, target); err != nil {
				t.Fatal(err)
			}
			doc, _ := bson.Marshal(bson.D{{Key: "_id", Value: 2}})
			err = w.writeOut(agg.SliceSource([]bsoncore.Document{doc}))
			if mongoerr.CodeOf(err) != mongoerr.CommandFailed {
				t.Fatalf("got %v, want CommandFailed", err)
			}
			if _, found, _ := eng.Get(nil, target, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 2)}); found {
				t.Error("the refused results reached the target")
			}
			for _, c := range eng.Catalog().Collections("db") {
				if c.Name != "dst" {
					t.Errorf("collection %s left behind", c.Name)
				}
			}
		})
	}
}
