package cairn_test

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// testSnapshotReads drives snapshot reads outside transactions (issue
// #19) as the Go driver's snapshot sessions send them: the first read
// takes readConcern snapshot without atClusterTime and the member returns
// the time it picked; the session's later find, aggregate and distinct
// read at that time, and a cursor's getMores continue at it, whatever was
// written since. An atClusterTime before the member's history is
// SnapshotTooOld, one in the future InvalidOptions (TestTransactionProtocol
// runs it on its set).
func testSnapshotReads(t *testing.T, c *mongo.Client) {
	ctx := context.Background()
	coll := c.Database("snap").Collection("c")
	if _, err := coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: 1}}, bson.D{{Key: "_id", Value: 2}, {Key: "x", Value: 1}}, bson.D{{Key: "_id", Value: 3}, {Key: "x", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	other := c.Database("snap").Collection("other")
	if _, err := other.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "y", Value: "old"}}); err != nil {
		t.Fatal(err)
	}
	sess, err := c.StartSession(options.Session().SetSnapshot(true))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	sc := mongo.NewSessionContext(ctx, sess)
	cur, err := coll.Find(sc, bson.D{}, options.Find().SetBatchSize(1).SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := coll.UpdateMany(ctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 2}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := other.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "y", Value: "new"}}}}); err != nil {
		t.Fatal(err)
	}
	xs := func(cur *mongo.Cursor) []int {
		t.Helper()
		var docs []struct{ X int }
		if err := cur.All(sc, &docs); err != nil {
			t.Fatal(err)
		}
		var out []int
		for _, d := range docs {
			out = append(out, d.X)
		}
		return out
	}
	if got := xs(cur); len(got) != 3 || got[0] != 1 || got[1] != 1 || got[2] != 1 {
		t.Errorf("a snapshot cursor's getMores after an update: x = %v, want [1 1 1]", got)
	}
	cur, err = coll.Find(sc, bson.D{{Key: "_id", Value: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if got := xs(cur); len(got) != 1 || got[0] != 1 {
		t.Errorf("the session's second find at its atClusterTime: x = %v, want [1]", got)
	}
	agg, err := coll.Aggregate(sc, mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "x", Value: 1}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := xs(agg); len(got) != 3 {
		t.Errorf("the session's aggregate: x = %v, want three 1s", got)
	}
	lk, err := coll.Aggregate(sc, mongo.Pipeline{
		{{Key: "$match", Value: bson.D{{Key: "_id", Value: 1}}}},
		{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "other"}, {Key: "localField", Value: "_id"}, {Key: "foreignField", Value: "_id"}, {Key: "as", Value: "o"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var joined []struct {
		X int
		O []struct{ Y string }
	}
	if err := lk.All(sc, &joined); err != nil || len(joined) != 1 || joined[0].X != 1 || len(joined[0].O) != 1 || joined[0].O[0].Y != "old" {
		t.Errorf("the session's $lookup reads the other collection at its time: %+v, %v, want x 1 joined with y old", joined, err)
	}
	res := coll.Distinct(sc, "x", bson.D{})
	var vals []int
	if err := res.Decode(&vals); err != nil || len(vals) != 1 || vals[0] != 1 {
		t.Errorf("the session's distinct: %v, %v, want [1]", vals, err)
	}
	var latest struct{ X int }
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&latest); err != nil || latest.X != 2 {
		t.Errorf("a plain read: x=%d, %v, want 2", latest.X, err)
	}

	// The reply carries the time the member picked.
	var reply bson.Raw
	if err := c.Database("snap").RunCommand(ctx, bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}}}}).Decode(&reply); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := reply.Lookup("cursor", "atClusterTime").TimestampOK(); !ok {
		t.Errorf("a snapshot find's reply has no cursor.atClusterTime: %v", reply)
	}
	for _, tc := range []struct {
		name string
		at   bson.Timestamp
		code int
	}{
		{"before the history", bson.Timestamp{T: 1}, 239},
		{"in the future", bson.Timestamp{T: uint32(time.Now().Add(time.Hour).Unix())}, 72},
	} {
		err := c.Database("snap").RunCommand(ctx, bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: tc.at}}}}).Err()
		if got := cmdCodeAny(err); got != tc.code {
			t.Errorf("atClusterTime %s: %v, want code %d", tc.name, err, tc.code)
		}
	}
}
