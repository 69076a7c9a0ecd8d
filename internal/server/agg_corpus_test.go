package server_test

import (
	"context"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/cairndb/cairn/internal/agg/aggtest"
)

// TestAggregationCorpusOverTheWire runs the aggregation corpus
// (internal/agg/testdata) as aggregate commands through a real server.
func TestAggregationCorpusOverTheWire(t *testing.T) {
	cases, err := aggtest.Load("../agg/testdata")
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t)
	c := s.client(t)
	n := 0
	aggtest.Run(t, cases, func(ac *aggtest.Case) (aggtest.Outcome, error) {
		n++
		return runAggregateOverWire(c, fmt.Sprintf("agg%d", n), ac)
	}, false)
}

func runAggregateOverWire(c *mongo.Client, dbName string, ac *aggtest.Case) (aggtest.Outcome, error) {
	ctx := context.Background()
	db := c.Database(dbName)
	defer db.Drop(ctx)
	if err := loadDocs(ctx, db, "input", ac.Docs); err != nil {
		return aggtest.Outcome{}, err
	}
	for name, docs := range ac.Collections {
		if err := loadDocs(ctx, db, name, docs); err != nil {
			return aggtest.Outcome{}, err
		}
	}
	admin := c.Database("admin")
	if ac.Options.MaxMemory > 0 {
		if err := admin.RunCommand(ctx, bson.D{{Key: "setParameter", Value: 1}, {Key: "internalQueryMaxBlockingSortMemoryUsageBytes", Value: ac.Options.MaxMemory}}).Err(); err != nil {
			return aggtest.Outcome{}, err
		}
		defer admin.RunCommand(ctx, bson.D{{Key: "setParameter", Value: 1}, {Key: "internalQueryMaxBlockingSortMemoryUsageBytes", Value: int64(100 << 20)}})
	}
	stages := bson.A{}
	for _, st := range ac.Pipeline {
		stages = append(stages, bson.Raw(st))
	}
	var target any = "input"
	if ac.Collectionless {
		target = 1
	}
	cmd := bson.D{{Key: "aggregate", Value: target}, {Key: "pipeline", Value: stages}, {Key: "cursor", Value: bson.D{{Key: "batchSize", Value: 2}}}}
	if ac.Options.AllowDiskUse {
		cmd = append(cmd, bson.E{Key: "allowDiskUse", Value: true})
	}
	if ac.Options.Let != nil {
		cmd = append(cmd, bson.E{Key: "let", Value: bson.Raw(ac.Options.Let)})
	}
	if ac.Options.Collation != nil {
		cmd = append(cmd, bson.E{Key: "collation", Value: bson.Raw(ac.Options.Collation)})
	}
	docs, code, err := cursorDocs(ctx, db, cmd)
	return aggtest.Outcome{Docs: docs, Code: code}, err
}
