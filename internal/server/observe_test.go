package server_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn/internal/metrics"
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

// TestMetricsScrapedUnderLoad scrapes the Prometheus endpoint while
// clients insert and read: every scrape parses, the counters only grow, and
// the last one accounts for the workload (per-command counts and latency
// histograms, connections, documents, commit groups, the block cache).
func TestMetricsScrapedUnderLoad(t *testing.T) {
	s := startServer(t)
	ln, err := metrics.Serve("127.0.0.1:0", s.env)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	url := "http://" + ln.Addr().String() + "/metrics"
	c := s.client(t)
	ctx := context.Background()
	coll := c.Database("prom").Collection("c")
	const workers, perWorker = 4, 50
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				id := w*perWorker + i
				if _, err := coll.InsertOne(ctx, bson.D{{"_id", id}}); err != nil {
					t.Error(err)
					return
				}
				if err := coll.FindOne(ctx, bson.D{{"_id", id}}).Err(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	var scrapes []map[string]float64
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		case <-time.After(20 * time.Millisecond):
		}
		scrapes = append(scrapes, scrape(t, url))
	}
	for i := 1; i < len(scrapes); i++ {
		for _, k := range []string{`cairn_commands_total{command="insert"}`, `cairn_documents_total{op="inserted"}`, "cairn_commit_group_size_count"} {
			if scrapes[i][k] < scrapes[i-1][k] {
				t.Errorf("scrape %d: %s went down from %v to %v", i, k, scrapes[i-1][k], scrapes[i][k])
			}
		}
	}
	last := scrapes[len(scrapes)-1]
	const total = workers * perWorker
	for k, want := range map[string]float64{
		`cairn_commands_total{command="insert"}`:                          total,
		`cairn_commands_total{command="find"}`:                            total,
		`cairn_command_duration_seconds_count{command="insert"}`:          total,
		`cairn_command_duration_seconds_bucket{command="find",le="+Inf"}`: total,
		`cairn_documents_total{op="inserted"}`:                            total,
		`cairn_documents_total{op="returned"}`:                            total,
	} {
		if last[k] != want {
			t.Errorf("%s = %v, want %v", k, last[k], want)
		}
	}
	for _, k := range []string{"cairn_connections", "cairn_commit_group_size_count", "cairn_commit_group_size_sum",
		"cairn_pebble_block_cache_capacity_bytes", "cairn_pebble_wal_bytes_written_total", "cairn_pebble_wal_sync_duration_seconds_count"} {
		if last[k] <= 0 {
			t.Errorf("%s = %v, want > 0 after %d writes", k, last[k], total)
		}
	}
	if last["cairn_commit_group_size_sum"] < total {
		t.Errorf("commit groups carried %v requests, want at least the %d inserts", last["cairn_commit_group_size_sum"], total)
	}
	t.Logf("%d scrapes during the workload", len(scrapes))
}

// scrape reads the endpoint's text format into series → value.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %d %v", resp.StatusCode, err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if i < 0 || err != nil {
			t.Fatalf("unparsable metric line %q", line)
		}
		out[line[:i]] = v
	}
	return out
}
