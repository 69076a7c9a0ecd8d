package server_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/query/querytest"
)

// TestQueryCorpusOverTheWire runs the query language's data-driven corpus
// (internal/query/testdata) through a real server with the official driver:
// the same cases the engine passes in process must pass as a client sees them.
func TestQueryCorpusOverTheWire(t *testing.T) {
	cases, err := querytest.Load("../query/testdata")
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t)
	db := s.client(t).Database("corpus")
	n := 0
	querytest.Run(t, cases, func(c *querytest.Case) (querytest.Outcome, error) {
		n++
		return runFindOverWire(db, fmt.Sprintf("c%d", n), c)
	}, false)
}

func runFindOverWire(db *mongo.Database, coll string, c *querytest.Case) (querytest.Outcome, error) {
	ctx := context.Background()
	if err := loadDocs(ctx, db, coll, c.Docs); err != nil {
		return querytest.Outcome{}, err
	}
	if len(c.Indexes) > 0 {
		specs := bson.A{}
		for _, ix := range c.Indexes {
			specs = append(specs, bson.Raw(ix))
		}
		if err := db.RunCommand(ctx, bson.D{{Key: "createIndexes", Value: coll}, {Key: "indexes", Value: specs}}).Err(); err != nil {
			return querytest.Outcome{}, err
		}
	}
	cmd := bson.D{{Key: "find", Value: coll}, {Key: "filter", Value: bson.Raw(c.Filter)}}
	if c.Projection != nil {
		cmd = append(cmd, bson.E{Key: "projection", Value: bson.Raw(c.Projection)})
	}
	if c.Sort != nil {
		cmd = append(cmd, bson.E{Key: "sort", Value: bson.Raw(c.Sort)})
	}
	if c.Skip != 0 {
		cmd = append(cmd, bson.E{Key: "skip", Value: c.Skip})
	}
	if c.Collation != nil {
		cmd = append(cmd, bson.E{Key: "collation", Value: bson.Raw(c.Collation)})
	}
	switch {
	case c.Limit > 0:
		cmd = append(cmd, bson.E{Key: "limit", Value: c.Limit})
	case c.Limit < 0:
		// As drivers send a negative limit: one batch of |limit| (the find
		// command refuses a negative limit, 51024).
		cmd = append(cmd, bson.E{Key: "limit", Value: -c.Limit}, bson.E{Key: "singleBatch", Value: true})
	}
	if c.Limit >= 0 {
		cmd = append(cmd, bson.E{Key: "batchSize", Value: 3}) // exercise getMore too
	}
	docs, code, err := cursorDocs(ctx, db, cmd)
	if err != nil {
		return querytest.Outcome{}, err
	}
	return querytest.Outcome{Docs: docs, Code: code}, db.Collection(coll).Drop(ctx)
}

// cursorDocs runs a command that answers with a cursor and reads all of
// it. A command error is the corpus case's outcome (its code); err is a
// failure of the harness itself.
func cursorDocs(ctx context.Context, db *mongo.Database, cmd bson.D) (docs []bsoncore.Document, code int32, err error) {
	outcome := func(err error) ([]bsoncore.Document, int32, error) {
		var ce mongo.CommandError
		if errors.As(err, &ce) {
			return nil, ce.Code, nil
		}
		return nil, 0, err
	}
	cur, err := db.RunCommandCursor(ctx, cmd)
	if err != nil {
		return outcome(err)
	}
	defer cur.Close(ctx)
	for cur.Next(ctx) {
		docs = append(docs, append(bsoncore.Document(nil), cur.Current...))
	}
	if err := cur.Err(); err != nil {
		return outcome(err)
	}
	return docs, 0, nil
}
