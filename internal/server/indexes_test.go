package server_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func TestIndexesOverTheWire(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	coll := c.Database("idx").Collection("users")
	name, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "email", Value: 1}}, Options: options.Index().SetUnique(true)})
	if err != nil || name != "email_1" {
		t.Fatalf("createIndex: %q %v", name, err)
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "email", Value: "a@x"}}); err != nil {
		t.Fatal(err)
	}
	_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}, {Key: "email", Value: "a@x"}})
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 11000 {
		t.Fatalf("duplicate email: %v, want 11000", err)
	}
	raw := we.WriteErrors[0].Raw
	if kp := raw.Lookup("keyPattern"); kp.String() != `{"email": {"$numberInt":"1"}}` {
		t.Errorf("keyPattern = %s", kp)
	}
	if kv := raw.Lookup("keyValue"); kv.String() != `{"email": "a@x"}` {
		t.Errorf("keyValue = %s", kv)
	}
	// An update frees the old key and takes the new one; a delete frees its key.
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "email", Value: "b@x"}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}, {Key: "email", Value: "a@x"}}); err != nil {
		t.Fatalf("the old key should be free after the update: %v", err)
	}
	_, err = coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "$set", Value: bson.D{{Key: "email", Value: "b@x"}}}})
	if !errors.As(err, &we) || we.WriteErrors[0].Code != 11000 {
		t.Fatalf("update onto a taken key: %v, want 11000", err)
	}
	var two bson.M
	_ = coll.FindOne(ctx, bson.D{{Key: "_id", Value: 2}}).Decode(&two)
	if two["email"] != "a@x" {
		t.Fatalf("a refused update changed the document: %v", two)
	}
	if _, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 3}, {Key: "email", Value: "b@x"}}); err != nil {
		t.Fatalf("the key should be free after the delete: %v", err)
	}
	// listIndexes, then drop by name.
	specs, err := coll.Indexes().ListSpecifications(ctx)
	if err != nil || len(specs) != 2 || specs[0].Name != "_id_" || specs[1].Name != "email_1" || specs[1].Unique == nil || !*specs[1].Unique {
		t.Fatalf("listIndexes: %+v %v", specs, err)
	}
	if err := coll.Indexes().DropOne(ctx, "email_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 4}, {Key: "email", Value: "b@x"}}); err != nil {
		t.Fatalf("after dropping the unique index duplicates are allowed: %v", err)
	}
}

// TestIndexesInsideCompoundID covers issue 7's multi-tenant ids: indexes on
// a field inside a subdocument _id, ascending and hashed.
func TestIndexesInsideCompoundID(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	coll := c.Database("tenants").Collection("things")
	for _, keys := range []bson.D{{{Key: "_id.env", Value: 1}}, {{Key: "_id.name", Value: "hashed"}}} {
		if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: keys}); err != nil {
			t.Fatalf("createIndex %v: %v", keys, err)
		}
	}
	for i := range 20 {
		env := []string{"prod", "dev"}[i%2]
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "env", Value: env}, {Key: "name", Value: fmt.Sprintf("n%d", i)}}}}); err != nil {
			t.Fatal(err)
		}
	}
	// Field order inside _id matters: {name, env} is another id.
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "name", Value: "n0"}, {Key: "env", Value: "prod"}}}}); err != nil {
		t.Fatalf("{name, env} must differ from {env, name}: %v", err)
	}
	// CountDocuments runs an aggregate whose leading $match uses the index.
	if n, err := coll.CountDocuments(ctx, bson.D{{Key: "_id.env", Value: "prod"}}); err != nil || n != 11 {
		t.Fatalf("CountDocuments(_id.env = prod) = %d %v, want 11", n, err)
	}
	cur, err := coll.Find(ctx, bson.D{{Key: "_id.env", Value: "prod"}})
	if err != nil {
		t.Fatal(err)
	}
	var prod []bson.M
	if err := cur.All(ctx, &prod); err != nil || len(prod) != 11 {
		t.Fatalf("find _id.env = prod: %d %v, want 11", len(prod), err)
	}
	specs, _ := coll.Indexes().ListSpecifications(ctx)
	if len(specs) != 3 || specs[1].Name != "_id.env_1" || specs[2].Name != "_id.name_hashed" {
		t.Fatalf("indexes: %+v", specs)
	}
}
