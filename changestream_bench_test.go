package cairn_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestChangeStreamBench measures change streams on a one-member set of a
// real `cairn serve` through the Go driver (BENCHMARKS.md "Change
// streams"): insert throughput (8 writers, majority) with no stream and
// with 10 open streams on the collection, each consumed as it arrives; and
// the latency from an insert's acknowledgement (and from its sending) to
// its event's delivery, p50 and p99. It runs only with CAIRN_CS_BENCH=1
// (CAIRN_CS_BENCH_N inserts per measure, default 20000): a measurement,
// not a check.
func TestChangeStreamBench(t *testing.T) {
	if os.Getenv("CAIRN_CS_BENCH") != "1" {
		t.Skip("a benchmark: CAIRN_CS_BENCH=1 runs it")
	}
	n := 20000
	if s := os.Getenv("CAIRN_CS_BENCH_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	client := startOneMemberSet(t, t.TempDir())
	ctx := context.Background()
	throughput := func(name string, streams int) float64 {
		coll := client.Database("bench").Collection(name)
		ok(t)(coll.InsertOne(ctx, bson.D{{Key: "_id", Value: -1}}))
		var wg sync.WaitGroup
		sctx, cancel := context.WithCancel(ctx)
		seen := make([]int, streams)
		for i := range streams {
			cs, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetMaxAwaitTime(100*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer cs.Close(context.Background())
				for cs.Next(sctx) {
					seen[i]++
				}
			}()
		}
		const writers = 8
		start := time.Now()
		var ww sync.WaitGroup
		for w := range writers {
			ww.Add(1)
			go func() {
				defer ww.Done()
				for j := w; j < n; j += writers {
					if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: j}, {Key: "v", Value: "a small document"}}); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		ww.Wait()
		el := time.Since(start)
		// Let the consumers catch up, then stop them.
		deadline := time.Now().Add(60 * time.Second)
		for i := 0; i < streams && time.Now().Before(deadline); {
			if seen[i] >= n {
				i++
				continue
			}
			time.Sleep(50 * time.Millisecond)
		}
		cancel()
		wg.Wait()
		for i, s := range seen {
			if s < n {
				t.Errorf("stream %d saw %d of %d inserts", i, s, n)
			}
		}
		rate := float64(n) / el.Seconds()
		t.Logf("%s: %d inserts with %d streams open: %.0f inserts/s", name, n, streams, rate)
		return rate
	}
	none := throughput("none", 0)
	ten := throughput("ten", 10)
	t.Logf("with 10 streams: %.1f%% of the throughput without", 100*ten/none)

	// Latency: one writer, one consumer; each insert's ack and send times
	// against its event's arrival.
	coll := client.Database("bench").Collection("latency")
	ok(t)(coll.InsertOne(ctx, bson.D{{Key: "_id", Value: -1}}))
	cs, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetMaxAwaitTime(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	m := min(n, 1000)
	arrived := make([]time.Time, m)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for k := 0; k < m && cs.Next(ctx); k++ {
			id, _ := cs.Current.Lookup("documentKey", "_id").AsInt64OK()
			arrived[id] = time.Now()
		}
	}()
	sent, acked := make([]time.Time, m), make([]time.Time, m)
	for j := range m {
		sent[j] = time.Now()
		ok(t)(coll.InsertOne(ctx, bson.D{{Key: "_id", Value: int64(j)}}))
		acked[j] = time.Now() // one writer, one insert at a time: not saturated
	}
	<-done
	var fromAck, fromSend []time.Duration
	for j := range m {
		fromAck = append(fromAck, max(0, arrived[j].Sub(acked[j])))
		fromSend = append(fromSend, arrived[j].Sub(sent[j]))
	}
	pct := func(d []time.Duration, p float64) time.Duration {
		slices.Sort(d)
		return d[int(p*float64(len(d)-1))]
	}
	t.Logf("commit (ack) → event delivered: p50 %v p99 %v; insert sent → event delivered: p50 %v p99 %v (%d inserts)",
		pct(fromAck, 0.5), pct(fromAck, 0.99), pct(fromSend, 0.5), pct(fromSend, 0.99), m)
}
