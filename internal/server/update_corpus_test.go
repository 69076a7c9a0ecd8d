package server_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/update/updatetest"
)

// TestUpdateCorpusOverTheWire runs the update language's data-driven corpus
// (internal/update/testdata) as update commands through a real server.
func TestUpdateCorpusOverTheWire(t *testing.T) {
	cases, err := updatetest.Load("../update/testdata")
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t)
	db := s.client(t).Database("ucorpus")
	n := 0
	updatetest.Run(t, cases, func(c *updatetest.Case) (updatetest.Outcome, error) {
		n++
		return runUpdateOverWire(db, fmt.Sprintf("u%d", n), c)
	}, false)
}

func runUpdateOverWire(db *mongo.Database, coll string, c *updatetest.Case) (updatetest.Outcome, error) {
	ctx := context.Background()
	if c.Doc != nil {
		if err := loadDocs(ctx, db, coll, []bsoncore.Document{c.Doc}); err != nil {
			return updatetest.Outcome{}, err
		}
	}
	stmt := bson.D{{Key: "q", Value: bson.Raw(c.Filter)}, {Key: "u", Value: bson.RawValue{Type: bson.Type(c.Update.Type), Value: c.Update.Data}},
		{Key: "upsert", Value: c.Upsert}, {Key: "multi", Value: c.Multi}}
	if c.ArrayFilters != nil {
		afs := bson.A{}
		for _, f := range c.ArrayFilters {
			afs = append(afs, bson.Raw(f))
		}
		stmt = append(stmt, bson.E{Key: "arrayFilters", Value: afs})
	}
	if c.Constants != nil {
		stmt = append(stmt, bson.E{Key: "c", Value: bson.Raw(c.Constants)})
	}
	cmd := bson.D{{Key: "update", Value: coll}, {Key: "updates", Value: bson.A{stmt}}}
	if c.Let != nil {
		cmd = append(cmd, bson.E{Key: "let", Value: bson.Raw(c.Let)})
	}
	var reply bson.Raw
	err := db.RunCommand(ctx, cmd).Decode(&reply)
	var out updatetest.Outcome
	var ce mongo.CommandError
	var we mongo.WriteException
	switch {
	case errors.As(err, &we) && len(we.WriteErrors) > 0:
		out.Code = int32(we.WriteErrors[0].Code) // the driver raises writeErrors
	case errors.As(err, &ce):
		out.Code = ce.Code
	case err != nil:
		return out, err
	}
	if we, err := reply.LookupErr("writeErrors", "0", "code"); err == nil {
		out.Code = we.Int32()
	}
	if nm, ok := reply.Lookup("nModified").AsInt64OK(); ok {
		out.Modified = nm > 0
	}
	_, out.Upserted = reply.Lookup("upserted").ArrayOK()
	var stored bson.Raw
	err = db.Collection(coll).FindOne(ctx, bson.D{}).Decode(&stored)
	switch {
	case errors.Is(err, mongo.ErrNoDocuments):
	case err != nil:
		return out, err
	default:
		out.Doc = bsoncore.Document(stored)
	}
	return out, db.Collection(coll).Drop(ctx)
}

// TestConcurrentIncrements is the concurrency check: 16 clients
// $inc one document 1,000 times each; no increment may be lost.
func TestConcurrentIncrements(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	coll := c.Database("inc").Collection("counter")
	ctx := context.Background()
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "c"}, {Key: "n", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	const clients, each = 16, 1000
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: "c"}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
				if err != nil || res.ModifiedCount != 1 {
					errs <- fmt.Errorf("increment: %+v %v", res, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var got struct {
		N int `bson:"n"`
	}
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: "c"}}).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.N != clients*each {
		t.Fatalf("n = %d, want %d: increments were lost", got.N, clients*each)
	}
}
