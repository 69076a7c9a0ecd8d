package shardsvr

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/shard"
)

// TestRangeReadThroughput measures what a migration's clone reads, in
// process (no network, no recipient): CAIRN_RANGE_BENCH_MB megabytes of 1
// KB documents in the chunk [1000, 2000) and CAIRN_RANGE_BENCH_OTHER_MB in
// [2000, 3000) of one collection, the chunk read through the shard key's
// index (eachInRange, as _migrateClone reads it now) and by a collection
// scan keeping the range's documents (as it read before), alternately in
// both orders. Not part of make test.
func TestRangeReadThroughput(t *testing.T) {
	mb, _ := strconv.Atoi(os.Getenv("CAIRN_RANGE_BENCH_MB"))
	if mb <= 0 {
		t.Skip("a benchmark: set CAIRN_RANGE_BENCH_MB (and CAIRN_RANGE_BENCH_OTHER_MB)")
	}
	other, _ := strconv.Atoi(os.Getenv("CAIRN_RANGE_BENCH_OTHER_MB"))
	n := localNode(t)
	ctx := context.Background()
	if _, err := n.local(ctx, "db", bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "k", Value: 1}}}, {Key: "name", Value: "k_1"}}}}}); err != nil {
		t.Fatal(err)
	}
	filler := string(make([]byte, 1000))
	for _, part := range []struct{ k0, n int }{{1000, mb * 1000}, {2000, other * 1000}} {
		for start := 0; start < part.n; start += 1000 {
			var docs bson.A
			for i := start; i < min(start+1000, part.n); i++ {
				docs = append(docs, bson.D{{Key: "_id", Value: fmt.Sprintf("%d-%d", part.k0, i)}, {Key: "k", Value: int64(part.k0 + i%1000)}, {Key: "pad", Value: filler}})
			}
			if _, err := n.local(ctx, "db", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	p, _ := shard.ParsePattern(bsoncore.NewDocumentBuilder().AppendInt32("k", 1).Build())
	r, err := newRange(p, bsoncore.NewDocumentBuilder().AppendInt32("k", 1000).Build(), bsoncore.NewDocumentBuilder().AppendInt32("k", 2000).Build())
	if err != nil {
		t.Fatal(err)
	}
	byIndex := func() (int64, error) {
		var size int64
		err := n.eachInRange(ctx, "db.c", r, nil, func(d bsoncore.Document, _ bool) error { size += int64(len(d)); return nil })
		return size, err
	}
	byScan := func() (int64, error) { // the clone before: every document, the range's kept
		var size int64
		reply, err := n.local(ctx, "db", bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 2000}})
		for {
			if err != nil {
				return 0, err
			}
			vals, id := batchOf(reply)
			for _, v := range vals {
				if d, _ := v.DocumentOK(); r.holds(d) {
					size += int64(len(d))
				}
			}
			if id == 0 {
				return size, nil
			}
			reply, err = n.local(ctx, "db", bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}, {Key: "batchSize", Value: 2000}})
		}
	}
	total := map[string]time.Duration{}
	for round := range 6 {
		order := []string{"index", "scan"}
		if round%2 == 1 {
			order = []string{"scan", "index"}
		}
		for _, how := range order {
			read := byIndex
			if how == "scan" {
				read = byScan
			}
			start := time.Now()
			size, err := read()
			took := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			total[how] += took
			t.Logf("round %d %s: %.1f MB in %s = %.1f MB/s", round, how, float64(size)/1e6, took.Round(time.Millisecond), float64(size)/1e6/took.Seconds())
		}
	}
	t.Logf("range scan of the index %.2f× as fast as the collection scan (%s vs %s over 6 rounds each)", float64(total["scan"])/float64(total["index"]), total["index"].Round(time.Millisecond), total["scan"].Round(time.Millisecond))
}
