package server_test

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestDuplicateKeyMessages checks the E11000 message in MongoDB's shape and
// keyPattern/keyValue on every write path that can hit a unique index.
func TestDuplicateKeyMessages(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	db := c.Database("dup")
	coll := db.Collection("c")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{"a", 1}, {"b", 1}}, Options: options.Index().SetUnique(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertOne(ctx, bson.D{{"_id", 1}, {"a", "x"}, {"b", 2.5}}); err != nil {
		t.Fatal(err)
	}
	const idMsg = `E11000 duplicate key error collection: dup.c index: _id_ dup key: { _id: 1 }`
	const abMsg = `E11000 duplicate key error collection: dup.c index: a_1_b_1 dup key: { a: "x", b: 2.5 }`
	for _, tc := range []struct {
		name            string
		cmd             bson.D
		msg, keyPattern string
	}{
		{"insert _id", bson.D{{"insert", "c"}, {"documents", bson.A{bson.D{{"_id", 1}}}}}, idMsg, `{"_id": {"$numberInt":"1"}}`},
		{"insert unique", bson.D{{"insert", "c"}, {"documents", bson.A{bson.D{{"_id", 2}, {"a", "x"}, {"b", 2.5}}}}}, abMsg, `{"a": {"$numberInt":"1"},"b": {"$numberInt":"1"}}`},
		{"update", bson.D{{"update", "c"}, {"updates", bson.A{bson.D{{"q", bson.D{{"_id", 3}}}, {"u", bson.D{{"$set", bson.D{{"a", "x"}, {"b", 2.5}}}}}, {"upsert", true}}}}}, abMsg, `{"a": {"$numberInt":"1"},"b": {"$numberInt":"1"}}`},
	} {
		raw, _ := rawReply(ctx, db, tc.cmd)
		we, err := raw.LookupErr("writeErrors", "0")
		if err != nil {
			t.Errorf("%s: no write error in %s", tc.name, raw)
			continue
		}
		d := we.Document()
		if got := d.Lookup("errmsg").StringValue(); got != tc.msg {
			t.Errorf("%s: errmsg %q, want %q", tc.name, got, tc.msg)
		}
		if got := d.Lookup("keyPattern").String(); got != tc.keyPattern {
			t.Errorf("%s: keyPattern %s, want %s", tc.name, got, tc.keyPattern)
		}
		if _, err := d.LookupErr("keyValue"); err != nil {
			t.Errorf("%s: no keyValue in %s", tc.name, d)
		}
	}

	// findAndModify fails the command with the same message and fields.
	err := db.RunCommand(ctx, bson.D{{"findAndModify", "c"}, {"query", bson.D{{"_id", 4}}}, {"update", bson.D{{"$set", bson.D{{"a", "x"}, {"b", 2.5}}}}}, {"upsert", true}}).Err()
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 11000 || ce.Message != abMsg {
		t.Fatalf("findAndModify: %v, want %q", err, abMsg)
	}
	if _, err := ce.Raw.LookupErr("keyValue"); err != nil {
		t.Errorf("findAndModify error lacks keyValue: %s", ce.Raw)
	}
}
