package engine

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/timeseries"
)

// TestCollModExpiry: collMod's expireAfterSeconds (a number, or "off") is
// what the TTL monitor then reads, for a clustered collection
// (ClusteredTTLs) and a time series one (TimeseriesTTLs); a plain
// collection refuses it.
func TestCollModExpiry(t *testing.T) {
	e := openEngine(t, "")
	ctx := context.Background()
	expiry := func(v any) []bsoncore.Element {
		raw, _ := bson.Marshal(bson.D{{Key: "expireAfterSeconds", Value: v}})
		elems, _ := bsoncore.Document(raw).Elements()
		return elems
	}
	clustered, _ := bson.Marshal(bson.D{{Key: "clusteredIndex", Value: bson.D{{Key: "v", Value: 2}, {Key: "key", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "name", Value: "_id_"}, {Key: "unique", Value: true}}}})
	k := Namespace{DB: "x", Coll: "k"}
	if err := e.CreateCollection(k, clustered); err != nil {
		t.Fatal(err)
	}
	clusteredTTL := func() (time.Duration, bool) {
		for _, c := range e.ClusteredTTLs() {
			if c.NS == k {
				return c.ExpireAfter, true
			}
		}
		return 0, false
	}
	if _, ok := clusteredTTL(); ok {
		t.Fatal("a clustered collection without expireAfterSeconds has a TTL")
	}
	for _, step := range []struct {
		set  any
		want time.Duration // 0: none
	}{{int64(90), 90 * time.Second}, {int32(30), 30 * time.Second}, {"off", 0}, {int64(5), 5 * time.Second}} {
		if _, err := e.CollMod(k, expiry(step.set), nil); err != nil {
			t.Fatalf("collMod expireAfterSeconds %v: %v", step.set, err)
		}
		got, ok := clusteredTTL()
		if ok != (step.want > 0) || got != step.want {
			t.Errorf("after expireAfterSeconds %v the TTL is %v (%v), want %v", step.set, got, ok, step.want)
		}
	}

	plain := Namespace{DB: "x", Coll: "plain"}
	if err := e.CreateCollection(plain, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CollMod(plain, expiry(int64(60)), nil); mongoerr.CodeOf(err) != mongoerr.InvalidOptions {
		t.Errorf("expireAfterSeconds on a plain collection: %v, want InvalidOptions", err)
	}

	o, err := timeseries.ParseOptions(bsoncore.NewDocumentBuilder().AppendString("timeField", "ts").Build(), "timeseries")
	if err != nil {
		t.Fatal(err)
	}
	sixty := int64(60)
	v := catalog.View{ID: "x.t", ViewOn: timeseries.BucketsCollection("t"),
		Pipeline:   bson.Raw(bsoncore.NewArrayBuilder().AppendDocument(o.UnpackStage()).Build()),
		Timeseries: bson.Raw(o.Document()), ExpireAfterSeconds: &sixty}
	if err := e.CreateTimeseries(ctx, v, o); err != nil {
		t.Fatal(err)
	}
	tsTTL := func() (time.Duration, bool) {
		for _, c := range e.TimeseriesTTLs() {
			if c.Buckets.Coll == timeseries.BucketsCollection("t") {
				return c.ExpireAfter, true
			}
		}
		return 0, false
	}
	if got, ok := tsTTL(); !ok || got != time.Minute {
		t.Fatalf("created with 60 s: %v %v", got, ok)
	}
	hour := int64(3600)
	for _, step := range []struct {
		secs *int64
		want time.Duration
	}{{&hour, time.Hour}, {nil, 0}, {&sixty, time.Minute}} {
		if err := e.SetTimeseriesExpiry("x", "t", step.secs); err != nil {
			t.Fatal(err)
		}
		got, ok := tsTTL()
		if ok != (step.want > 0) || got != step.want {
			t.Errorf("time series TTL %v, want %v", got, step.want)
		}
		buckets := e.Catalog().Collection("x", timeseries.BucketsCollection("t"))
		n, has := bsoncore.Document(buckets.Options).Lookup("expireAfterSeconds").AsInt64OK()
		if has != (step.want > 0) || has && time.Duration(n)*time.Second != step.want {
			t.Errorf("buckets options %s, want expireAfterSeconds %v", bson.Raw(buckets.Options), step.want)
		}
	}
}
