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

func commandCode(err error) int32 {
	var ce mongo.CommandError
	if errors.As(err, &ce) {
		return ce.Code
	}
	var se mongo.ServerError
	if errors.As(err, &se) {
		for _, code := range []int32{2, 11000, 43, 59, 26, 48, 73, 53, 10334, 16, 352, 115} {
			if se.HasErrorCode(int(code)) {
				return code
			}
		}
	}
	return -1
}

func TestHandshakeAndPing(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	var hello bson.M
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&hello); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"isWritablePrimary": true, "maxBsonObjectSize": int32(16777216), "maxMessageSizeBytes": int32(48000000),
		"maxWriteBatchSize": int32(100000), "maxWireVersion": int32(21), "logicalSessionTimeoutMinutes": int32(30),
	}
	for k, v := range want {
		if hello[k] != v {
			t.Errorf("hello.%s = %v (%T), want %v", k, hello[k], hello[k], v)
		}
	}
	if _, ok := hello["setName"]; ok {
		t.Error("a standalone must not report setName")
	}
	if _, ok := hello["connectionId"]; !ok {
		t.Error("hello lacks connectionId")
	}
	if err := c.Ping(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var bi bson.M
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&bi); err != nil {
		t.Fatal(err)
	}
	if bi["version"] != "7.0.14" || fmt.Sprint(bi["versionArray"]) != "[7 0 14 0]" {
		t.Errorf("buildInfo version %v %v", bi["version"], bi["versionArray"])
	}
}

func TestConnectTimeCommands(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	admin := c.Database("admin")
	ok := []bson.D{
		{{Key: "getLog", Value: "startupWarnings"}},
		{{Key: "getParameter", Value: "*"}},
		{{Key: "getParameter", Value: 1}, {Key: "featureCompatibilityVersion", Value: 1}},
		{{Key: "getCmdLineOpts", Value: 1}},
		{{Key: "hostInfo", Value: 1}},
		{{Key: "serverStatus", Value: 1}},
		{{Key: "connectionStatus", Value: 1}},
		{{Key: "whatsmyuri", Value: 1}},
		{{Key: "listDatabases", Value: 1}},
		{{Key: "killAllSessions", Value: bson.A{}}},
		{{Key: "endSessions", Value: bson.A{}}},
	}
	for _, cmd := range ok {
		if err := admin.RunCommand(ctx, cmd).Err(); err != nil {
			t.Errorf("%s: %v", cmd[0].Key, err)
		}
	}
	if err := admin.RunCommand(ctx, bson.D{{Key: "atlasVersion", Value: 1}}).Err(); commandCode(err) != 59 {
		t.Errorf("atlasVersion: %v, want CommandNotFound (59)", err)
	}
	// Counting a collection that does not exist is 0, not an error.
	n, err := c.Database("nope").Collection("nothing").EstimatedDocumentCount(ctx)
	if err != nil || n != 0 {
		t.Errorf("count of a missing collection: %d %v", n, err)
	}
}

func TestCRUDOverTheWire(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	for _, comp := range []string{"", "snappy", "zstd", "zlib"} {
		t.Run("compressor="+comp, func(t *testing.T) {
			opts := options.Client()
			if comp != "" {
				opts.SetCompressors([]string{comp})
			}
			c := s.client(t, opts)
			coll := c.Database("crud").Collection("c_" + comp)
			res, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "name", Value: "one"}})
			if err != nil || res.InsertedID != int32(1) {
				t.Fatalf("InsertOne: %v %v", res, err)
			}
			docs := make([]any, 500)
			for i := range docs {
				docs[i] = bson.D{{Key: "_id", Value: i + 2}, {Key: "n", Value: i}, {Key: "pad", Value: fmt.Sprintf("%0500d", i)}}
			}
			if _, err := coll.InsertMany(ctx, docs); err != nil {
				t.Fatal(err)
			}
			var one bson.M
			if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&one); err != nil || one["name"] != "one" {
				t.Fatalf("FindOne: %v %v", one, err)
			}
			// Many batches through getMore.
			cur, err := coll.Find(ctx, bson.D{}, options.Find().SetBatchSize(7))
			if err != nil {
				t.Fatal(err)
			}
			var all []bson.M
			if err := cur.All(ctx, &all); err != nil {
				t.Fatal(err)
			}
			if len(all) != 501 {
				t.Fatalf("found %d documents, want 501", len(all))
			}
			for i, d := range all {
				if d["_id"] != int32(i+1) {
					t.Fatalf("document %d has _id %v: not in _id order", i, d["_id"])
				}
			}
			// Equality filter on a field.
			cur, err = coll.Find(ctx, bson.D{{Key: "n", Value: 41}})
			if err != nil {
				t.Fatal(err)
			}
			all = nil
			if err := cur.All(ctx, &all); err != nil || len(all) != 1 || all[0]["_id"] != int32(43) {
				t.Fatalf("find n=41: %v %v", all, err)
			}
			up, err := coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "name", Value: "uno"}})
			if err != nil || up.MatchedCount != 1 || up.ModifiedCount != 1 {
				t.Fatalf("ReplaceOne: %+v %v", up, err)
			}
			ups, err := coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: "new"}}, bson.D{{Key: "x", Value: 1}}, options.Replace().SetUpsert(true))
			if err != nil || ups.UpsertedID != "new" {
				t.Fatalf("upsert: %+v %v", ups, err)
			}
			del, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 2}})
			if err != nil || del.DeletedCount != 1 {
				t.Fatalf("DeleteOne: %+v %v", del, err)
			}
			dm, err := coll.DeleteMany(ctx, bson.D{})
			if err != nil || dm.DeletedCount != 501 { // 501 inserted, one deleted, one upserted
				t.Fatalf("DeleteMany: %+v %v", dm, err)
			}
			if n, err := coll.EstimatedDocumentCount(ctx); err != nil || n != 0 {
				t.Fatalf("count after delete: %d %v", n, err)
			}
		})
	}
}

func TestWriteErrors(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	coll := c.Database("w").Collection("dups")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "a"}}); err != nil {
		t.Fatal(err)
	}
	_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "a"}})
	if !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("duplicate: %v", err)
	}
	// Unordered: every failure reported by index, the rest inserted.
	_, err = coll.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "a"}}, bson.D{{Key: "_id", Value: "b"}}, bson.D{{Key: "_id", Value: bson.A{1}}}, bson.D{{Key: "_id", Value: "c"}},
	}, options.InsertMany().SetOrdered(false))
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || len(bwe.WriteErrors) != 2 || bwe.WriteErrors[0].Index != 0 || bwe.WriteErrors[0].Code != 11000 ||
		bwe.WriteErrors[1].Index != 2 || bwe.WriteErrors[1].Code != 53 {
		t.Fatalf("unordered insert errors: %#v", err)
	}
	if n, _ := coll.EstimatedDocumentCount(ctx); n != 3 {
		t.Fatalf("count = %d, want 3", n)
	}
	db := c.Database("w")
	if err := db.RunCommand(ctx, bson.D{{Key: "noSuchCommand", Value: 1}}).Err(); commandCode(err) != 59 {
		t.Errorf("unknown command: %v", err)
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "insert", Value: "bad$name"}, {Key: "documents", Value: bson.A{bson.D{}}}}).Err(); commandCode(err) != 73 {
		t.Errorf("invalid namespace: %v", err)
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "getMore", Value: int64(12345)}, {Key: "collection", Value: "dups"}}).Err(); commandCode(err) != 43 {
		t.Errorf("getMore of an unknown cursor: %v", err)
	}
	if err := db.CreateCollection(ctx, "dups"); err != nil {
		t.Errorf("create of an existing collection with the same options: %v", err)
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "create", Value: "dups"}, {Key: "idGenerator", Value: "sequential"}}).Err(); commandCode(err) != 48 {
		t.Errorf("create with other options: %v, want NamespaceExists (48)", err)
	}
}

func TestCursorsAndDDL(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	db := c.Database("ddl")
	coll := db.Collection("k")
	docs := make([]any, 50)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetBatchSize(10))
	if err != nil {
		t.Fatal(err)
	}
	if !cur.Next(ctx) {
		t.Fatal("no first document")
	}
	id := cur.ID()
	if id == 0 {
		t.Fatal("a 50-document result in batches of 10 should leave a cursor open")
	}
	if err := cur.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "k"}}).Err(); commandCode(err) != 43 {
		t.Errorf("getMore after killCursors: %v, want CursorNotFound", err)
	}
	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil || fmt.Sprint(names) != "[k]" {
		t.Fatalf("collections %v %v", names, err)
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "renameCollection", Value: "ddl.k"}, {Key: "to", Value: "ddl.k2"}}).Err(); err != nil {
		t.Fatal(err)
	}
	if n, _ := db.Collection("k2").EstimatedDocumentCount(ctx); n != 50 {
		t.Fatalf("renamed collection has %d documents", n)
	}
	dbs, err := c.ListDatabaseNames(ctx, bson.D{})
	if err != nil || fmt.Sprint(dbs) != "[ddl local]" { // local: the oplog
		t.Fatalf("databases %v %v", dbs, err)
	}
	if err := db.Collection("k2").Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.Collection("never-existed").Drop(ctx); err != nil {
		t.Fatalf("dropping a missing collection succeeds since MongoDB 7.0: %v", err)
	}
	if err := db.Drop(ctx); err != nil {
		t.Fatal(err)
	}
}
