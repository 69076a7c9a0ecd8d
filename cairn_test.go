package cairn_test

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn"
)

type user struct {
	ID   string `bson:"_id"`
	Name string `bson:"name"`
	Age  int    `bson:"age"`
}

func TestEmbeddedCRUD(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := cairn.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	users := db.Database("app").Collection("users")

	res, err := users.InsertOne(ctx, bson.D{{Key: "name", Value: "generated"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.InsertedID.(bson.ObjectID); !ok {
		t.Fatalf("InsertedID = %T, want a generated ObjectID", res.InsertedID)
	}
	many, err := users.InsertMany(ctx, []any{user{"ann", "Ann", 31}, user{"bob", "Bob", 42}})
	if err != nil {
		t.Fatal(err)
	}
	if len(many.InsertedIDs) != 2 || many.InsertedIDs[0] != "ann" || many.InsertedIDs[1] != "bob" {
		t.Fatalf("InsertedIDs = %v", many.InsertedIDs)
	}

	_, err = users.InsertOne(ctx, user{"ann", "Again", 1})
	if !cairn.IsDuplicateKeyError(err) {
		t.Fatalf("duplicate insert: err = %v, want a duplicate key error", err)
	}

	var got user
	if err := users.FindOne(ctx, bson.D{{Key: "_id", Value: "bob"}}).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got != (user{"bob", "Bob", 42}) {
		t.Fatalf("FindOne = %+v", got)
	}
	if err := users.FindOne(ctx, bson.D{{Key: "_id", Value: "nobody"}}).Err(); !errors.Is(err, cairn.ErrNoDocuments) {
		t.Fatalf("FindOne(missing) err = %v", err)
	}

	up, err := users.ReplaceOne(ctx, bson.D{{Key: "_id", Value: "bob"}}, bson.D{{Key: "name", Value: "Robert"}, {Key: "age", Value: 43}})
	if err != nil || up.MatchedCount != 1 {
		t.Fatalf("ReplaceOne: %+v %v", up, err)
	}
	del, err := users.DeleteOne(ctx, bson.D{{Key: "_id", Value: "ann"}})
	if err != nil || del.DeletedCount != 1 {
		t.Fatalf("DeleteOne: %+v %v", del, err)
	}

	// Unsupported filters are refused, never misread.
	if _, err := users.Find(ctx, bson.D{{Key: "age", Value: bson.D{{Key: "$gt", Value: 1}}}}); cairn.ErrorCode(err) != 2 {
		t.Fatalf("operator filter: err = %v, want BadValue (2)", err)
	}

	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// Everything survives a reopen.
	db, err = cairn.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	users = db.Database("app").Collection("users")
	cur, err := users.Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var all []bson.M
	if err := cur.All(ctx, &all); err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 {
		t.Fatalf("after reopen found %d documents, want 2: %v", len(all), all)
	}
	// _id order is MongoDB's type order: strings before ObjectIds.
	if all[0]["_id"] != "bob" || all[0]["name"] != "Robert" {
		t.Fatalf("after reopen the first document is %v, want bob renamed Robert", all[0])
	}
	if _, ok := all[1]["_id"].(bson.ObjectID); !ok {
		t.Fatalf("after reopen the second document is %v, want the generated ObjectId", all[1])
	}
	names, _ := db.ListDatabaseNames(ctx)
	if len(names) != 1 || names[0] != "app" {
		t.Fatalf("databases = %v", names)
	}
}

func TestEmbeddedOpenTwiceFails(t *testing.T) {
	dir := t.TempDir()
	db, err := cairn.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := cairn.Open(dir, nil); err == nil {
		t.Fatal("a second Open of the same directory succeeded")
	}
}
