package server_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cairndb/cairn/internal/engine"
)

// TestTTLMonitorOverTheWire sets ttlMonitorSleepSecs to 1 and checks that
// the monitor deletes exactly the expired documents: a past date, an array
// whose earliest date is past; not future dates, non-dates, missing fields,
// nor documents of an index whose expireAfterSeconds has not passed.
func TestTTLMonitorOverTheWire(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	admin := c.Database("admin")
	if err := admin.RunCommand(ctx, bson.D{{Key: "setParameter", Value: 1}, {Key: "ttlMonitorSleepSecs", Value: 1}}).Err(); err != nil {
		t.Fatal(err)
	}
	coll := c.Database("ttl").Collection("events")
	if _, err := coll.Indexes().CreateMany(ctx, []mongo.IndexModel{
		{Keys: bson.D{{Key: "at", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(0)},
		{Keys: bson.D{{Key: "k", Value: 1}}},
	}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	past, future := bson.NewDateTimeFromTime(now.Add(-time.Hour)), bson.NewDateTimeFromTime(now.Add(time.Hour))
	docs := []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "at", Value: past}, {Key: "k", Value: 1}},
		bson.D{{Key: "_id", Value: 2}, {Key: "at", Value: future}, {Key: "k", Value: 2}},
		bson.D{{Key: "_id", Value: 3}, {Key: "at", Value: "2001-01-01"}, {Key: "k", Value: 3}},
		bson.D{{Key: "_id", Value: 4}, {Key: "at", Value: bson.A{future, past}}, {Key: "k", Value: 4}},
		bson.D{{Key: "_id", Value: 5}, {Key: "at", Value: bson.A{future, future}}, {Key: "k", Value: 5}},
		bson.D{{Key: "_id", Value: 6}, {Key: "k", Value: 6}},
		bson.D{{Key: "_id", Value: 7}, {Key: "at", Value: 12345}, {Key: "k", Value: 7}},
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	// An hour-long TTL: a 30-minute-old document stays.
	slow := c.Database("ttl").Collection("slow")
	if _, err := slow.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "at", Value: -1}}, Options: options.Index().SetExpireAfterSeconds(3600)}); err != nil {
		t.Fatal(err)
	}
	if _, err := slow.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "at", Value: bson.NewDateTimeFromTime(now.Add(-30 * time.Minute))}},
		bson.D{{Key: "_id", Value: 2}, {Key: "at", Value: bson.NewDateTimeFromTime(now.Add(-2 * time.Hour))}},
	}); err != nil {
		t.Fatal(err)
	}
	waitForIDs(t, coll, []int32{2, 3, 5, 6, 7})
	waitForIDs(t, slow, []int32{1})
	// A document that expires later goes in a later pass.
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 8}, {Key: "at", Value: past}}); err != nil {
		t.Fatal(err)
	}
	waitForIDs(t, coll, []int32{2, 3, 5, 6, 7})
	if err := s.env.Engine.CheckIndexes(engine.Namespace{DB: "ttl", Coll: "events"}); err != nil {
		t.Fatal(err)
	}
	// The counters are published when a pass ends, which may be after the
	// deletions the finds above saw: poll them.
	waitFor(t, func() (bool, string) {
		var st bson.Raw
		if err := admin.RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Decode(&st); err != nil {
			t.Fatal(err)
		}
		passes := st.Lookup("metrics", "ttl", "passes").Int64()
		n := st.Lookup("metrics", "ttl", "deletedDocuments").Int64()
		return passes >= 2 && n == 4, fmt.Sprintf("metrics.ttl passes = %d (want >= 2), deletedDocuments = %d (want 4)", passes, n)
	})

	// collMod shortens the hour to a minute: the 30-minute-old document goes.
	db := c.Database("ttl")
	var res bson.Raw
	if err := db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "slow"}, {Key: "index", Value: bson.D{
		{Key: "keyPattern", Value: bson.D{{Key: "at", Value: -1}}}, {Key: "expireAfterSeconds", Value: 60}}}}).Decode(&res); err != nil {
		t.Fatal(err)
	}
	if res.Lookup("expireAfterSeconds_old").Int64() != 3600 || res.Lookup("expireAfterSeconds_new").Int64() != 60 {
		t.Errorf("collMod reply = %s", res)
	}
	waitForIDs(t, slow, nil)
	specs, err := slow.Indexes().ListSpecifications(ctx)
	if err != nil || len(specs) != 2 || specs[1].ExpireAfterSeconds == nil || *specs[1].ExpireAfterSeconds != 60 {
		t.Fatalf("listIndexes after collMod: %+v %v", specs, err)
	}
	// hidden, by name; expireAfterSeconds of an index without a TTL is refused.
	if err := db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "events"}, {Key: "index", Value: bson.D{
		{Key: "name", Value: "k_1"}, {Key: "hidden", Value: true}}}}).Decode(&res); err != nil {
		t.Fatal(err)
	}
	if !res.Lookup("hidden_new").Boolean() || res.Lookup("hidden_old").Boolean() {
		t.Errorf("collMod hidden reply = %s", res)
	}
	err = db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "events"}, {Key: "index", Value: bson.D{
		{Key: "name", Value: "k_1"}, {Key: "expireAfterSeconds", Value: 5}}}}).Err()
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 72 {
		t.Errorf("collMod expireAfterSeconds of a non-TTL index: %v, want 72", err)
	}
	err = db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "events"}, {Key: "index", Value: bson.D{
		{Key: "name", Value: "nope"}, {Key: "hidden", Value: true}}}}).Err()
	if !errors.As(err, &ce) || ce.Code != 27 {
		t.Errorf("collMod of a missing index: %v, want 27", err)
	}
	if err := s.env.Engine.CheckIndexes(engine.Namespace{DB: "ttl", Coll: "events"}); err != nil {
		t.Fatal(err)
	}
}

// waitForIDs waits up to ten seconds (ten monitor passes) for coll to hold
// exactly the documents with these _ids.
func waitForIDs(t *testing.T, coll *mongo.Collection, want []int32) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	var got []int32
	for {
		cur, err := coll.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
		if err != nil {
			t.Fatal(err)
		}
		var docs []struct {
			ID int32 `bson:"_id"`
		}
		if err := cur.All(ctx, &docs); err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, d := range docs {
			got = append(got, d.ID)
		}
		if slices.Equal(got, want) || len(got) == 0 && len(want) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds _ids %v, want %v", coll.Name(), got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitFor polls cond for up to ten seconds and fails with its last
// description if it never holds.
func waitFor(t *testing.T, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, desc := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(desc)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
