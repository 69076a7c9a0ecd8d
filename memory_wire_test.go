package cairn_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestServeMemoryBound checks issue 16's memory bound from outside, under
// the load that broke it: a real `cairn serve --cacheSizeGB 0.25` and 32
// clients each inserting 1,000 YCSB-sized documents (10 fields of 100
// random characters) at a time, as `cairn bench`'s load phase does (with
// twice its clients), 64,000 documents in all; then the kernel's
// high-water mark of the server's resident memory (VmHWM) must be within
// the cache plus loadOverheadMiB. A load writes around the block cache
// (it fills only as tables are read), so what this bounds is the rest:
// the Go heap (the requests in flight, the commit groups, the log's
// blocks) and the memtables. Before the commit pipeline's group cap
// (invariant "Bounded group") this load peaked at 445 and 490 MiB; with
// it, at 303 and 299 MiB (two runs each, load averages 18–33). BENCHMARKS.md's 1 M-record run
// gives the bound with a filled cache. Not a timed test: the load's
// speed does not matter, its concurrency does.
func TestServeMemoryBound(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the server's VmHWM from /proc")
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOMEMLIMIT is set: the server would take it instead of the limit under test")
	}
	t.Parallel()
	const (
		cacheMiB        = 256
		loadOverheadMiB = 128
		clients         = 32
		batches         = 2 // per client
		batch           = 1000
	)
	bin := buildCairnBinary(t, t.TempDir())
	p := spawnServe(t, bin, "--port", "0", "--dbpath", t.TempDir(), "--cacheSizeGB", strconv.FormatFloat(cacheMiB/1024.0, 'f', -1, 64))
	addr := p.waitReady(t)
	client := wireClient(t, addr)
	defer client.Disconnect(context.Background())
	coll := client.Database("mem").Collection("usertable")
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(c)))
		wg.Go(func() {
			docs := make([]any, batch)
			for b := range batches {
				for i := range docs {
					d := bson.D{{Key: "_id", Value: fmt.Sprintf("user%d-%d-%d", c, b, i)}}
					for f := range 10 {
						d = append(d, bson.E{Key: "field" + strconv.Itoa(f), Value: randomText(rng, 100)})
					}
					docs[i] = d
				}
				if _, err := coll.InsertMany(ctx, docs, options.InsertMany().SetOrdered(true)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n, err := coll.EstimatedDocumentCount(ctx); err != nil || n != clients*batches*batch {
		t.Fatalf("count %d (%v), want %d", n, err, clients*batches*batch)
	}
	hwm, rss := procMemMiB(t, p.cmd.Process.Pid)
	t.Logf("server VmHWM %d MiB, VmRSS %d MiB after the load (cache %d MiB, bound %d MiB)", hwm, rss, cacheMiB, cacheMiB+loadOverheadMiB)
	if hwm > cacheMiB+loadOverheadMiB {
		t.Errorf("the server's resident memory peaked at %d MiB, past the cache (%d MiB) plus %d MiB", hwm, cacheMiB, loadOverheadMiB)
	}
}

// randomText is n printable characters, as YCSB's field values.
func randomText(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(' ' + 1 + rng.IntN(94))
	}
	return string(b)
}

// procMemMiB reads a process's peak and current resident memory.
func procMemMiB(t *testing.T, pid int) (hwm, rss int64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, v, ok := strings.Cut(line, ":")
		if !ok || name != "VmHWM" && name != "VmRSS" {
			continue
		}
		f := strings.Fields(v)
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if name == "VmHWM" {
			hwm = kb >> 10
		} else {
			rss = kb >> 10
		}
	}
	if hwm == 0 {
		t.Fatalf("no VmHWM in /proc/%d/status", pid)
	}
	return hwm, rss
}
