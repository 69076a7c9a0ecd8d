package server_test

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestUsageCounters drives a known workload and checks that serverStatus,
// top and $collStats latencyStats count it: the figures are the server's,
// not placeholders.
func TestUsageCounters(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	admin := c.Database("admin")
	status := func() bson.Raw {
		raw, err := admin.RunCommand(ctx, bson.D{{"serverStatus", 1}}).Raw()
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	num := func(raw bson.Raw, path ...string) int64 {
		v, err := raw.LookupErr(path...)
		if err != nil {
			t.Fatalf("no %v in %s", path, raw)
		}
		n, ok := v.AsInt64OK()
		if !ok {
			t.Fatalf("%v is %s", path, v.Type)
		}
		return n
	}
	before := status()
	coll := c.Database("use").Collection("c")
	const docs, finds = 20, 7
	for i := range docs {
		if _, err := coll.InsertOne(ctx, bson.D{{"_id", i}, {"a", i % 4}}); err != nil {
			t.Fatal(err)
		}
	}
	for range finds {
		if err := coll.FindOne(ctx, bson.D{{"a", 3}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	after := status()
	for _, c := range []struct {
		path []string
		min  int64
	}{
		{[]string{"opLatencies", "writes", "ops"}, docs},
		{[]string{"opLatencies", "reads", "ops"}, finds},
		{[]string{"opLatencies", "reads", "latency"}, finds}, // at least 1µs each
		{[]string{"metrics", "document", "inserted"}, docs},
		{[]string{"metrics", "document", "returned"}, finds},
		{[]string{"metrics", "queryExecutor", "scannedObjects"}, finds * 4}, // a collection scan stops at its first match, the 4th document
		{[]string{"metrics", "queryExecutor", "collectionScans", "total"}, finds},
		{[]string{"locks", "Global", "acquireCount", "w"}, docs},
	} {
		if d := num(after, c.path...) - num(before, c.path...); d < c.min {
			t.Errorf("%v grew by %d over the workload, want at least %d", c.path, d, c.min)
		}
	}
	if r, v := num(after, "mem", "resident"), num(after, "mem", "virtual"); r <= 0 || v <= r {
		t.Errorf("mem.resident %d and mem.virtual %d: want 0 < resident < virtual for a Go process", r, v)
	}

	raw, err := admin.RunCommand(ctx, bson.D{{"top", 1}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	entry, err := raw.LookupErr("totals", "use.c")
	if err != nil {
		t.Fatalf("top has no use.c: %s", raw)
	}
	e := entry.Document()
	if got := num(bson.Raw(e), "insert", "count"); got != docs {
		t.Errorf("top use.c insert.count %d, want %d", got, docs)
	}
	if got := num(bson.Raw(e), "queries", "count"); got != finds {
		t.Errorf("top use.c queries.count %d, want %d", got, finds)
	}
	if got := num(bson.Raw(e), "total", "count"); got != docs+finds {
		t.Errorf("top use.c total.count %d, want %d", got, docs+finds)
	}

	cur, err := coll.Aggregate(ctx, bson.A{bson.D{{"$collStats", bson.D{{"latencyStats", bson.D{{"histograms", true}}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	var out []bson.Raw
	if err := cur.All(ctx, &out); err != nil || len(out) != 1 {
		t.Fatalf("$collStats: %v %v", out, err)
	}
	if got := num(out[0], "latencyStats", "writes", "ops"); got != docs {
		t.Errorf("latencyStats.writes.ops %d, want %d", got, docs)
	}
	hist, err := out[0].LookupErr("latencyStats", "writes", "histogram")
	if err != nil {
		t.Fatalf("no histogram: %s", out[0])
	}
	vals, _ := hist.Array().Values()
	var inBuckets int64
	for _, v := range vals {
		inBuckets += num(v.Document(), "count")
	}
	if inBuckets != docs {
		t.Errorf("the writes histogram counts %d commands, want %d: %s", inBuckets, docs, hist)
	}
}
