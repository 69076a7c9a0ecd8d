// Command pointread drives a fixed number of YCSB-C reads (FindOne by _id
// through the official Go driver, as `cairn bench` sends them) at a server
// that holds `cairn bench`'s records (its load phase), in phases, and runs
// a shell command before the first phase and after each one. It is the harness of issue
// 16's instruction counts (BENCHMARKS.md): with the server under
// `valgrind --tool=callgrind --instr-atstart=no`, the command before turns
// instrumentation on and the one after each phase dumps the counters, so
// phase k's dump holds exactly its reads; with strace -c -f attached
// instead, the system calls per read.
//
//	pointread -uri mongodb://127.0.0.1:37001 -phases 2000,12000 \
//	    -before 'callgrind_control -i on PID' -after 'callgrind_control -d PID'
//
// The reads are spread over -threads connections (16, as YCSB-C's
// threads), each choosing keys uniformly with its own seeded generator, so
// every run sends the same reads. Before the phases it reads every
// -warm-stride'th key once, in order, so that every block of the
// collection is in the server's cache when counting starts.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cairndb/cairn/internal/bench"
)

func main() {
	uri := flag.String("uri", "mongodb://127.0.0.1:27017", "server holding the records")
	db := flag.String("db", "cairn_bench", "database")
	coll := flag.String("collection", "usertable", "collection")
	threads := flag.Int("threads", 16, "connections reading at once")
	phases := flag.String("phases", "2000,12000", "reads per phase, comma-separated")
	before := flag.String("before", "", "shell command run before the first phase")
	after := flag.String("after", "", "shell command run after each phase ({} is the phase's number, from 1)")
	records := flag.Int("records", 100_000, "records the load phase wrote (cairn bench --records): keys 0 to records-1")
	stride := flag.Int("warm-stride", 8, "read every n-th key once before the phases (0: no warm-up)")
	seed := flag.Uint64("seed", 1, "seed of the key choices")
	flag.Parse()
	if err := run(*uri, *db, *coll, *records, *threads, *phases, *before, *after, *stride, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "pointread:", err)
		os.Exit(1)
	}
}

func run(uri, db, collName string, records, threads int, phases, before, after string, stride int, seed uint64) error {
	var counts []int
	for _, f := range strings.Split(phases, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return fmt.Errorf("-phases: %q is not a positive count", f)
		}
		counts = append(counts, n)
	}
	ctx := context.Background()
	client, err := mongo.Connect(options.Client().ApplyURI(uri).SetMaxPoolSize(uint64(threads)).SetMinPoolSize(uint64(threads)))
	if err != nil {
		return err
	}
	defer client.Disconnect(ctx)
	coll := client.Database(db).Collection(collName)
	keys := make([]string, records)
	for n := range keys {
		keys[n] = bench.RecordKey(int64(n))
	}
	slices.Sort(keys) // in _id order, so that the warm-up's stride reaches every block
	read := func(k string) error {
		var doc bson.Raw
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: k}}).Decode(&doc); err != nil {
			return fmt.Errorf("read of %v: %w", k, err)
		}
		return nil
	}
	// each runs n reads over the threads, thread t choosing with rngs[t].
	rngs := make([]*rand.Rand, threads)
	for t := range rngs {
		rngs[t] = rand.New(rand.NewPCG(seed, uint64(t)))
	}
	each := func(n int, pick func(t, i int) string) error {
		var wg sync.WaitGroup
		errs := make([]error, threads)
		for t := range threads {
			share := n / threads
			if t < n%threads {
				share++
			}
			wg.Go(func() {
				for i := range share {
					if err := read(pick(t, i)); err != nil {
						errs[t] = err
						return
					}
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		return nil
	}
	if stride > 0 {
		n := (len(keys) + stride - 1) / stride
		if err := each(n, func(t, i int) string { return keys[((i*threads+t)*stride)%len(keys)] }); err != nil {
			return err
		}
	}
	if err := shell(before, 0); err != nil {
		return err
	}
	for p, n := range counts {
		start := time.Now()
		if err := each(n, func(t, _ int) string { return keys[rngs[t].IntN(len(keys))] }); err != nil {
			return err
		}
		took := time.Since(start)
		if err := shell(after, p+1); err != nil {
			return err
		}
		fmt.Printf("phase %d: %d reads in %v\n", p+1, n, took.Round(time.Millisecond))
	}
	return nil
}

func shell(cmd string, phase int) error {
	if cmd == "" {
		return nil
	}
	c := exec.Command("sh", "-c", strings.ReplaceAll(cmd, "{}", strconv.Itoa(phase)))
	c.Stdout, c.Stderr = os.Stderr, os.Stderr
	return c.Run()
}
