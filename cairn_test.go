package cairn_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

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

	// The query language, through the same command code a server runs.
	for i := range 20 {
		if _, err := users.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "age", Value: i % 7}, {Key: "tags", Value: bson.A{"t", i % 3}}}); err != nil {
			t.Fatal(err)
		}
	}
	cur, err := users.Find(ctx, bson.D{{Key: "age", Value: bson.D{{Key: "$gte", Value: 5}}}, {Key: "_id", Value: bson.D{{Key: "$type", Value: "int"}}}},
		&cairn.FindOptions{Sort: bson.D{{Key: "age", Value: -1}, {Key: "_id", Value: 1}}, Projection: bson.D{{Key: "age", Value: 1}}, BatchSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	var older []struct {
		ID   int `bson:"_id"`
		Age  int `bson:"age"`
		Tags any `bson:"tags"`
	}
	if err := cur.All(ctx, &older); err != nil {
		t.Fatal(err)
	}
	// ages 6 (ids 6, 13) then 5 (ids 5, 12, 19); tags projected away.
	want := "[{6 6 <nil>} {13 6 <nil>} {5 5 <nil>} {12 5 <nil>} {19 5 <nil>}]"
	if got := fmt.Sprint(older); got != want {
		t.Fatalf("sorted, projected find over several batches:\n got %s\nwant %s", got, want)
	}
	if n, err := users.CountDocuments(ctx, bson.D{{Key: "tags", Value: 2}}); err != nil || n != 6 {
		t.Fatalf("CountDocuments(tags: 2) = %d %v, want 6", n, err)
	}
	if vals, err := users.Distinct(ctx, "age", bson.D{{Key: "_id", Value: bson.D{{Key: "$lt", Value: 10}}}}); err != nil || len(vals) != 7 {
		t.Fatalf("Distinct(age) = %v %v, want 7 values", vals, err)
	}
	var gone bson.M
	if err := users.FindOneAndDelete(ctx, bson.D{{Key: "_id", Value: 0}}).Decode(&gone); err != nil || gone["age"] != int32(0) {
		t.Fatalf("FindOneAndDelete: %v %v", gone, err)
	}
	if del, err := users.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$type", Value: "int"}}}}); err != nil || del.DeletedCount != 19 {
		t.Fatalf("DeleteMany: %+v %v", del, err)
	}
	if _, err := users.Find(ctx, bson.D{{Key: "$foo", Value: 1}}); cairn.ErrorCode(err) != 2 {
		t.Fatalf("unknown top-level operator: err = %v, want BadValue (2)", err)
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
	cur, err = users.Find(ctx, bson.D{})
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
	if len(names) != 2 || names[0] != "app" || names[1] != "local" { // local: the oplog
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

// TestEmbeddedValidation checks the embedded API enforces a collection's
// validator (it runs the same commands as the wire) and reports errInfo.
func TestEmbeddedValidation(t *testing.T) {
	ctx := context.Background()
	db, err := cairn.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	app := db.Database("app")
	validator := bson.D{{Key: "validator", Value: bson.D{{Key: "age", Value: bson.D{{Key: "$gte", Value: 0}}}}}}
	if err := app.CreateCollection(ctx, "people", validator); err != nil {
		t.Fatal(err)
	}
	people := app.Collection("people")
	if _, err := people.InsertOne(ctx, user{"ann", "Ann", 31}); err != nil {
		t.Fatal(err)
	}
	_, err = people.InsertOne(ctx, user{"bob", "Bob", -1})
	var we *cairn.WriteException
	if !errors.As(err, &we) || we.WriteErrors[0].Code != 121 || we.WriteErrors[0].Info.Lookup("failingDocumentId").StringValue() != "bob" {
		t.Fatalf("invalid insert: %v, want DocumentValidationFailure with errInfo", err)
	}
	_, err = people.UpdateOne(ctx, bson.D{{Key: "_id", Value: "ann"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "age", Value: -5}}}})
	if cairn.ErrorCode(err) != 121 && !(errors.As(err, &we) && we.WriteErrors[0].Code == 121) {
		t.Fatalf("invalid update: %v, want DocumentValidationFailure", err)
	}
	if n, err := people.CountDocuments(ctx, bson.D{{Key: "age", Value: bson.D{{Key: "$lt", Value: 0}}}}); err != nil || n != 0 {
		t.Fatalf("%d invalid documents stored (%v)", n, err)
	}
}

// TestEmbeddedCancelMidQuery: cancelling the context of a query in the
// middle of a long scan ends it promptly with context.Canceled.
func TestEmbeddedCancelMidQuery(t *testing.T) {
	db, err := cairn.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	coll := db.Database("app").Collection("slow")
	docs := make([]any, 8000)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}}
	}
	if _, err := coll.InsertMany(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	// A few hundred microseconds per document, never true: seconds in all.
	slow := bson.D{{Key: "$expr", Value: bson.D{{Key: "$eq", Value: bson.A{
		bson.D{{Key: "$size", Value: bson.D{{Key: "$range", Value: bson.A{0, 10000}}}}}, -1}}}}}
	ctx, cancel := context.WithCancel(context.Background())
	var cancelled time.Time
	time.AfterFunc(50*time.Millisecond, func() { cancelled = time.Now(); cancel() })
	start := time.Now()
	_, err = coll.CountDocuments(ctx, slow)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("CountDocuments after cancel: %v, want context.Canceled", err)
	}
	if cancelled.IsZero() {
		t.Fatalf("the query ended (%v) before the cancel", time.Since(start))
	}
	late := time.Since(cancelled)
	t.Logf("returned %v after the cancel", late)
	if late > 500*time.Millisecond {
		t.Fatalf("the query ran %v past its cancel", late)
	}
}
