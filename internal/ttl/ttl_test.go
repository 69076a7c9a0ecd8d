package ttl_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/exec"
	"github.com/cairndb/cairn/internal/timeseries"
	"github.com/cairndb/cairn/internal/ttl"
)

func raw(t *testing.T, d bson.D) bsoncore.Document {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPassUsesTheClock drives expiry with a fake clock: documents expire
// exactly when clock - expireAfterSeconds passes their date.
func TestPassUsesTheClock(t *testing.T) {
	eng, err := engine.Open(t.TempDir(), engine.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ns := engine.Namespace{DB: "t", Coll: "c"}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var docs []bsoncore.Document
	for i := range 10 {
		docs = append(docs, raw(t, bson.D{{Key: "_id", Value: i}, {Key: "at", Value: bson.NewDateTimeFromTime(base.Add(time.Duration(i) * time.Minute))}}))
	}
	if _, err := eng.Insert(ns, docs, true); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.CreateIndexes(context.Background(), ns, []bsoncore.Document{raw(t, bson.D{{Key: "key", Value: bson.D{{Key: "at", Value: 1}}}, {Key: "name", Value: "at_1"}, {Key: "expireAfterSeconds", Value: 60}})}); err != nil {
		t.Fatal(err)
	}
	var now atomic.Pointer[time.Time]
	set := func(t time.Time) { now.Store(&t) }
	set(base.Add(4*time.Minute + 30*time.Second)) // cutoff 3m30s: minutes 0..3 expire
	m := ttl.Start(eng, ttl.Options{Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return *now.Load() }})
	defer m.Stop()
	if n := m.Pass(); n != 4 {
		t.Fatalf("first pass deleted %d, want 4", n)
	}
	if n := m.Pass(); n != 0 {
		t.Fatalf("a second pass at the same time deleted %d, want 0", n)
	}
	set(base.Add(time.Hour))
	if n := m.Pass(); n != 6 {
		t.Fatalf("an hour later a pass deleted %d, want the other 6", n)
	}
	if m.Deleted() != 10 || m.Passes() != 3 {
		t.Errorf("Deleted = %d, Passes = %d", m.Deleted(), m.Passes())
	}
	if err := eng.CheckIndexes(ns); err != nil {
		t.Fatal(err)
	}
}

// TestPeriodChangesAtRuntime starts with the default period and lowers it:
// passes start within about a second, without a restart.
func TestPeriodChangesAtRuntime(t *testing.T) {
	eng, err := engine.Open(t.TempDir(), engine.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	var period atomic.Int64
	period.Store(int64(ttl.DefaultPeriod))
	m := ttl.Start(eng, ttl.Options{Logger: slog.New(slog.DiscardHandler), Period: func() time.Duration { return time.Duration(period.Load()) }})
	time.Sleep(1200 * time.Millisecond)
	if p := m.Passes(); p != 0 {
		t.Fatalf("%d passes within 1.2s of a 60s period", p)
	}
	period.Store(int64(200 * time.Millisecond))
	deadline := time.Now().Add(5 * time.Second)
	for m.Passes() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d passes in 5s after lowering the period to 200ms", m.Passes())
		}
		time.Sleep(50 * time.Millisecond)
	}
	m.Stop()
	after := m.Passes()
	time.Sleep(500 * time.Millisecond)
	if m.Passes() != after {
		t.Error("passes continued after Stop")
	}
}

// TestPassExpiresTimeseriesBuckets: a time series collection's buckets go
// once every measurement they may hold is older than expireAfterSeconds
// (the bucket's min time plus its span before the cutoff), as in MongoDB.
func TestPassExpiresTimeseriesBuckets(t *testing.T) {
	eng, err := engine.Open(t.TempDir(), engine.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	o := timeseries.Options{TimeField: "t", BucketMaxSpanSeconds: 60, BucketRoundingSeconds: 60}
	expire := int64(60)
	v := catalog.View{ID: "t.w", ViewOn: timeseries.BucketsCollection("w"),
		Pipeline:   bson.Raw(bsoncore.NewArrayBuilder().AppendDocument(o.UnpackStage()).Build()),
		Timeseries: bson.Raw(o.Document()), ExpireAfterSeconds: &expire}
	if err := eng.CreateTimeseries(context.Background(), v, o); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var docs []bsoncore.Document
	for i := range 10 { // one bucket per minute
		docs = append(docs, raw(t, bson.D{{Key: "t", Value: bson.NewDateTimeFromTime(base.Add(time.Duration(i) * time.Minute))}}))
	}
	buckets := engine.Namespace{DB: "t", Coll: timeseries.BucketsCollection("w")}
	if _, err := exec.New(eng).InsertTimeseries(context.Background(), exec.Timeseries{Buckets: buckets, Opts: o}, exec.TimeseriesInsert{Docs: docs, Ordered: true}); err != nil {
		t.Fatal(err)
	}
	now := base.Add(5*time.Minute + 30*time.Second) // cutoff 4m30s, less the span: buckets of minutes 0..3
	m := ttl.Start(eng, ttl.Options{Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return now }})
	defer m.Stop()
	if n := m.Pass(); n != 4 {
		t.Fatalf("a pass deleted %d buckets, want 4", n)
	}
	st, err := eng.CollectionStats(context.Background(), buckets)
	if err != nil {
		t.Fatal(err)
	}
	if st.Count != 6 {
		t.Fatalf("%d buckets left, want 6", st.Count)
	}
}

// TestPassExpiresClusteredIDs: a clustered collection with
// expireAfterSeconds loses the documents whose _id is a date before the
// cutoff; other _id types stay.
func TestPassExpiresClusteredIDs(t *testing.T) {
	eng, err := engine.Open(t.TempDir(), engine.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ns := engine.Namespace{DB: "t", Coll: "c"}
	opts := raw(t, bson.D{{Key: "clusteredIndex", Value: bson.D{{Key: "v", Value: 2}, {Key: "key", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "name", Value: "_id_"}, {Key: "unique", Value: true}}}, {Key: "expireAfterSeconds", Value: int64(60)}})
	if err := eng.CreateCollection(ns, bson.Raw(opts)); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var docs []bsoncore.Document
	for i := range 10 {
		docs = append(docs, raw(t, bson.D{{Key: "_id", Value: bson.NewDateTimeFromTime(base.Add(time.Duration(i) * time.Minute))}}))
	}
	docs = append(docs, raw(t, bson.D{{Key: "_id", Value: "not a date"}}), raw(t, bson.D{{Key: "_id", Value: bson.NewObjectIDFromTimestamp(base)}}))
	if _, err := eng.Insert(ns, docs, true); err != nil {
		t.Fatal(err)
	}
	now := base.Add(4*time.Minute + 30*time.Second) // cutoff 3m30s: minutes 0..3
	m := ttl.Start(eng, ttl.Options{Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return now }})
	defer m.Stop()
	if n := m.Pass(); n != 4 {
		t.Fatalf("a pass deleted %d, want 4", n)
	}
	now = base.Add(time.Hour)
	if n := m.Pass(); n != 6 {
		t.Fatalf("an hour later a pass deleted %d, want the other 6 dates (not the string or ObjectId _ids)", n)
	}
}
