package server_test

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestVersionedSeedScenario runs issue #23's seed scenario through the Go
// driver over the wire: three versions of docId 174, the latest by _id,
// the latest documents matching attr1, a compare-and-swap that loses the
// race and retries, an audit of every version, an as-of read between
// versions 1 and 2 (find, count, distinct and aggregate), and a deleted
// document's history.
func TestVersionedSeedScenario(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	db := c.Database("seed")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(db.RunCommand(ctx, bson.D{{Key: "create", Value: "docs"}, {Key: "versioning", Value: bson.D{{Key: "enabled", Value: true}}}}).Err())
	coll := db.Collection("docs")
	_, err := coll.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: 174}, {Key: "attr1", Value: "red"}, {Key: "n", Value: 1}},
		bson.D{{Key: "_id", Value: 175}, {Key: "attr1", Value: "red"}, {Key: "n", Value: 1}},
		bson.D{{Key: "_id", Value: 176}, {Key: "attr1", Value: "blue"}, {Key: "n", Value: 1}},
	})
	must(err)
	for _, n := range []int{2, 3} {
		res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 174}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: n}}}})
		must(err)
		if res.ModifiedCount != 1 {
			t.Fatalf("update to n=%d modified %d", n, res.ModifiedCount)
		}
	}

	// The latest version by _id.
	var latest struct {
		ID int   `bson:"_id"`
		V  int64 `bson:"_v"`
		N  int   `bson:"n"`
	}
	must(coll.FindOne(ctx, bson.D{{Key: "_id", Value: 174}}).Decode(&latest))
	if latest.V != 3 || latest.N != 3 {
		t.Fatalf("latest of 174: %+v, want _v 3, n 3", latest)
	}
	// Every latest document where attr1 = red.
	cur, err := coll.Find(ctx, bson.D{{Key: "attr1", Value: "red"}})
	must(err)
	var reds []bson.M
	must(cur.All(ctx, &reds))
	if len(reds) != 2 {
		t.Fatalf("attr1 red: %v", reds)
	}

	// Compare-and-swap: a writer holding version 2 loses, re-reads, retries.
	res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 174}, {Key: "_v", Value: 2}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 40}}}})
	must(err)
	if res.MatchedCount != 0 {
		t.Fatalf("a stale CAS matched %d", res.MatchedCount)
	}
	must(coll.FindOne(ctx, bson.D{{Key: "_id", Value: 174}}).Decode(&latest))
	res, err = coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 174}, {Key: "_v", Value: latest.V}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 4}}}})
	must(err)
	if res.ModifiedCount != 1 {
		t.Fatalf("the retried CAS modified %d", res.ModifiedCount)
	}
	// A client cannot set the version.
	_, err = coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 174}}, bson.D{{Key: "$set", Value: bson.D{{Key: "_v", Value: 99}}}})
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 66 {
		t.Fatalf("$set of _v: %v, want ImmutableField 66", err)
	}

	// The audit: every version of 174, newest first.
	type version struct {
		ID        int            `bson:"_id"`
		V         int64          `bson:"_v"`
		ValidFrom bson.Timestamp `bson:"validFrom"`
		ValidTo   any            `bson:"validTo"`
		Op        string         `bson:"op"`
		Doc       bson.M         `bson:"doc"`
	}
	audit := func(id int) []version {
		t.Helper()
		cur, err := coll.Aggregate(ctx, bson.A{bson.D{{Key: "$versions", Value: bson.D{}}}, bson.D{{Key: "$match", Value: bson.D{{Key: "_id", Value: id}}}}})
		must(err)
		var vs []version
		must(cur.All(ctx, &vs))
		return vs
	}
	vs := audit(174)
	if len(vs) != 4 {
		t.Fatalf("174 has %d versions, want 4: %+v", len(vs), vs)
	}
	for i, v := range vs {
		if v.V != int64(4-i) || v.Doc["n"] != int32(4-i) {
			t.Fatalf("version %d: %+v", i, v)
		}
		if i > 0 && v.ValidTo != vs[i-1].ValidFrom {
			t.Fatalf("version %d ends at %v, the next starts at %v", v.V, v.ValidTo, vs[i-1].ValidFrom)
		}
	}
	if vs[0].ValidTo != nil || vs[3].Op != "insert" || vs[0].Op != "update" {
		t.Fatalf("newest/oldest: %+v / %+v", vs[0], vs[3])
	}

	// As of a time between versions 1 and 2: 174 had n 1.
	at := vs[2].ValidFrom // just before version 2: version 1 holds, and 175 and 176 exist
	if at.I > 1 {
		at.I--
	} else {
		at.T, at.I = at.T-1, 1<<31
	}
	rc := bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: at}}
	var found bson.Raw
	found, err = db.RunCommand(ctx, bson.D{{Key: "find", Value: "docs"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 174}}}, {Key: "readConcern", Value: rc}}).Raw()
	must(err)
	first := firstDoc(found)
	if n := first.Lookup("n").Int32(); n != 1 || first.Lookup("_v").Int64() != 1 {
		t.Fatalf("174 as of version 1's time: %s", first)
	}
	found, err = db.RunCommand(ctx, bson.D{{Key: "count", Value: "docs"}, {Key: "query", Value: bson.D{{Key: "n", Value: 1}}}, {Key: "readConcern", Value: rc}}).Raw()
	must(err)
	if n := found.Lookup("n").Int32(); n != 3 {
		t.Fatalf("count n=1 as of version 1: %d, want 3", n)
	}
	found, err = db.RunCommand(ctx, bson.D{{Key: "distinct", Value: "docs"}, {Key: "key", Value: "n"}, {Key: "readConcern", Value: rc}}).Raw()
	must(err)
	if vals, _ := found.Lookup("values").Array().Values(); len(vals) != 1 {
		t.Fatalf("distinct n as of version 1: %s", found)
	}
	found, err = db.RunCommand(ctx, bson.D{{Key: "aggregate", Value: "docs"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "s", Value: bson.D{{Key: "$sum", Value: "$n"}}}}}}}}, {Key: "cursor", Value: bson.D{}}, {Key: "readConcern", Value: rc}}).Raw()
	must(err)
	if sum := firstDoc(found).Lookup("s").Int32(); sum != 3 {
		t.Fatalf("sum of n as of version 1: %d, want 3", sum)
	}

	// A deleted document's history ends in a tombstone, and it is gone
	// from reads of the latest but not from reads of the past.
	_, err = coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 175}})
	must(err)
	vs = audit(175)
	if len(vs) != 2 || vs[0].Op != "delete" || vs[0].Doc != nil || vs[1].Op != "insert" {
		t.Fatalf("175's history: %+v", vs)
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{{Key: "_id", Value: 175}}); n != 0 {
		t.Fatalf("deleted 175 still counted")
	}
	found, err = db.RunCommand(ctx, bson.D{{Key: "count", Value: "docs"}, {Key: "query", Value: bson.D{{Key: "_id", Value: 175}}}, {Key: "readConcern", Value: rc}}).Raw()
	must(err)
	if n := found.Lookup("n").Int32(); n != 1 {
		t.Fatalf("175 as of before its delete: count %d", n)
	}

	// Bad input, each with its code.
	for _, tc := range []struct {
		name string
		cmd  bson.D
		code int32
	}{
		{"$versions not first", bson.D{{Key: "aggregate", Value: "docs"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{}}}, bson.D{{Key: "$versions", Value: bson.D{}}}}}, {Key: "cursor", Value: bson.D{}}}, 40602},
		{"as-of read of an unversioned collection", bson.D{{Key: "find", Value: "plain"}, {Key: "readConcern", Value: rc}}, 76},
		{"as-of insert", bson.D{{Key: "insert", Value: "docs"}, {Key: "documents", Value: bson.A{bson.D{}}}, {Key: "readConcern", Value: rc}}, 72},
		{"atClusterTime not a timestamp", bson.D{{Key: "find", Value: "docs"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: 5}}}}, 14},
		{"atClusterTime in the future", bson.D{{Key: "find", Value: "docs"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: bson.Timestamp{T: at.T + 100000}}}}}, 72},
	} {
		if tc.name == "as-of read of an unversioned collection" {
			_, err := db.Collection("plain").InsertOne(ctx, bson.D{})
			must(err)
		}
		err := db.RunCommand(ctx, tc.cmd).Err()
		var ce mongo.CommandError
		if !errors.As(err, &ce) || ce.Code != tc.code {
			t.Errorf("%s: %v, want code %d", tc.name, err, tc.code)
		}
	}
}

// firstDoc is the first document of a cursor reply's first batch.
func firstDoc(reply bson.Raw) bson.Raw {
	vals, _ := reply.Lookup("cursor", "firstBatch").Array().Values()
	if len(vals) == 0 {
		return bson.Raw(nil)
	}
	return vals[0].Document()
}

// TestVersionedSnapshotTooOld reads, over the wire, before the retention
// horizon of a versioned collection whose old versions a retention pass
// pruned: find by _id (the point read), find of every document, count,
// distinct and aggregate are each SnapshotTooOld (239), a read after the
// horizon still answers, nothing changed, and serverStatus counts what
// went.
func TestVersionedSnapshotTooOld(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	db := c.Database("retention")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(db.RunCommand(ctx, bson.D{{Key: "create", Value: "docs"}, {Key: "versioning", Value: bson.D{{Key: "enabled", Value: true}, {Key: "minVersionsToKeep", Value: 1}}}}).Err())
	coll := db.Collection("docs")
	_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 0}})
	must(err)
	for n := 1; n <= 2; n++ {
		_, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: n}}}})
		must(err)
	}
	cur, err := coll.Aggregate(ctx, bson.A{bson.D{{Key: "$versions", Value: bson.D{}}}})
	must(err)
	var vs []struct {
		ValidFrom bson.Timestamp `bson:"validFrom"`
	}
	must(cur.All(ctx, &vs))
	if len(vs) != 3 {
		t.Fatalf("%d versions before pruning, want 3", len(vs))
	}
	if n := s.env.History.Pass(); n != 2 {
		t.Fatalf("a retention pass pruned %d versions, want 2", n)
	}
	asOf := func(ts bson.Timestamp) bson.D {
		return bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: ts}}
	}
	old := asOf(vs[2].ValidFrom) // version 1's time: pruned
	for _, tc := range []struct {
		name string
		cmd  bson.D
	}{
		{"find by _id", bson.D{{Key: "find", Value: "docs"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "readConcern", Value: old}}},
		{"find all", bson.D{{Key: "find", Value: "docs"}, {Key: "readConcern", Value: old}}},
		{"count", bson.D{{Key: "count", Value: "docs"}, {Key: "readConcern", Value: old}}},
		{"distinct", bson.D{{Key: "distinct", Value: "docs"}, {Key: "key", Value: "n"}, {Key: "readConcern", Value: old}}},
		{"aggregate", bson.D{{Key: "aggregate", Value: "docs"}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{}}, {Key: "readConcern", Value: old}}},
	} {
		err := db.RunCommand(ctx, tc.cmd).Err()
		var ce mongo.CommandError
		if !errors.As(err, &ce) || ce.Code != 239 || ce.Name != "SnapshotTooOld" {
			t.Errorf("%s before the horizon: %v, want SnapshotTooOld 239", tc.name, err)
		}
	}
	found, err := db.RunCommand(ctx, bson.D{{Key: "find", Value: "docs"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "readConcern", Value: asOf(vs[0].ValidFrom)}}).Raw()
	must(err)
	if d := firstDoc(found); d.Lookup("n").Int32() != 2 || d.Lookup("_v").Int64() != 3 {
		t.Fatalf("as of the newest version: %s", d)
	}
	var latest bson.M
	must(coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&latest))
	if latest["n"] != int32(2) || latest["_v"] != int64(3) {
		t.Fatalf("latest after the refused reads: %v", latest)
	}
	st, err := db.RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Raw()
	must(err)
	if n := st.Lookup("metrics", "versioning", "prunedVersions"); n.AsInt64() != 2 {
		t.Fatalf("serverStatus metrics.versioning.prunedVersions %s, want 2", n)
	}
}
