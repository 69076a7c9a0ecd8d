package server_test

import (
	"context"
	"regexp"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestGeneratedIDsOverTheWire(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	db := c.Database("ids")
	admin := c.Database("admin")
	if err := db.RunCommand(ctx, bson.D{{Key: "create", Value: "seq"}, {Key: "idGenerator", Value: "sequential"}}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.RunCommand(ctx, bson.D{{Key: "setParameter", Value: 1}, {Key: "documentIdUniquePrefix", Value: 0x2a}}).Err(); err != nil {
		t.Fatal(err)
	}
	// A raw insert (the driver adds _ids itself unless told not to).
	var reply struct {
		N            int32 `bson:"n"`
		GeneratedIDs []struct {
			Index int32  `bson:"index"`
			ID    string `bson:"_id"`
		} `bson:"generatedIds"`
	}
	err := db.RunCommand(ctx, bson.D{{Key: "insert", Value: "seq"}, {Key: "documents", Value: bson.A{
		bson.D{{Key: "a", Value: 1}}, bson.D{{Key: "_id", Value: "given"}}, bson.D{{Key: "a", Value: 3}},
	}}}).Decode(&reply)
	if err != nil {
		t.Fatal(err)
	}
	if reply.N != 3 || len(reply.GeneratedIDs) != 2 || reply.GeneratedIDs[0].Index != 0 || reply.GeneratedIDs[1].Index != 2 {
		t.Fatalf("reply %+v: want n 3 and generatedIds for indexes 0 and 2", reply)
	}
	format := regexp.MustCompile(`^002a[0-9a-f]{24}$`)
	for _, g := range reply.GeneratedIDs {
		if !format.MatchString(g.ID) {
			t.Fatalf("generated id %q does not carry prefix 002a in the 28-hex format", g.ID)
		}
		var stored bson.M
		if err := db.Collection("seq").FindOne(ctx, bson.D{{Key: "_id", Value: g.ID}}).Decode(&stored); err != nil {
			t.Fatalf("generated id %s not stored: %v", g.ID, err)
		}
	}
	if reply.GeneratedIDs[0].ID >= reply.GeneratedIDs[1].ID {
		t.Fatalf("ids not increasing within a batch: %+v", reply.GeneratedIDs)
	}
	specs, err := db.ListCollectionSpecifications(ctx, bson.D{{Key: "name", Value: "seq"}})
	if err != nil || len(specs) != 1 || specs[0].Options.Lookup("idGenerator").StringValue() != "sequential" {
		t.Fatalf("listCollections options: %v %v", specs, err)
	}
	if err := admin.RunCommand(ctx, bson.D{{Key: "setParameter", Value: 1}, {Key: "documentIdUniquePrefix", Value: 70000}}).Err(); commandCode(err) != 2 {
		t.Fatalf("out-of-range prefix: %v, want BadValue (2)", err)
	}
	var got bson.M
	if err := admin.RunCommand(ctx, bson.D{{Key: "getParameter", Value: 1}, {Key: "documentIdUniquePrefix", Value: 1}}).Decode(&got); err != nil || got["documentIdUniquePrefix"] != int64(0x2a) {
		t.Fatalf("getParameter: %v %v", got, err)
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "create", Value: "bad"}, {Key: "idGenerator", Value: "uuid"}}).Err(); commandCode(err) != 2 {
		t.Fatalf("idGenerator uuid: %v, want BadValue (2)", err)
	}
}
