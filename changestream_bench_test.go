package cairn_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestChangeStreamBench measures change streams on a one-member set of a
// real `cairn serve` through the Go driver (BENCHMARKS.md "Change
// streams"): insert throughput (8 writers, majority) with no stream and
// with 10 open streams on the collection, each consumed as it arrives,
// measured in rounds that interleave the two (none, ten; then ten, none;
// ...) so that whatever drifts during the run (the machine's load, the
// store's memtable) falls on both sides; and the latency from an insert's
// acknowledgement (and from its sending) to its event's delivery, p50 and
// p99. It runs only with CAIRN_CS_BENCH=1 (CAIRN_CS_BENCH_N inserts per
// measure, default 20000; CAIRN_CS_BENCH_ROUNDS rounds, default 2): a
// measurement, not a check. With CAIRN_CS_BENCH_PROFILE=<dir> and a server
// built with -tags cairnpprof (CAIRN_TEST_BIN) serving its profiles at
// CAIRN_PPROF, each measure also saves the server's CPU profile of its
// first CAIRN_CS_BENCH_PROFILE_SECONDS (default 2) as <dir>/<measure>.pprof,
// for `go tool pprof -diff_base none0.pprof ten0.pprof`. With
// CAIRN_CS_BENCH_RATE=<inserts/s> the writers insert at that rate (below
// what the machine can do): the throughput is then the rate, and the CPU
// per insert of each side compares the work at one flow of events, which
// a machine loaded by others blurs less than a saturated run's. With
// CAIRN_CS_BENCH_STAGGER=1 the streams open one by one while inserts flow.
// With CAIRN_CS_BENCH_DUMP=<shell command> that command runs where each
// measure's CPU is read, before its inserts and after its events were
// all delivered, with {pid} the server's process id: with the server
// under `valgrind --tool=callgrind --instr-atstart=yes` (CAIRN_TEST_BIN a
// script that execs it) and `callgrind_control -d {pid}`, each measure's
// instructions are one dump of their own (BENCHMARKS.md, "Ten open change
// streams, session 13").
func TestChangeStreamBench(t *testing.T) {
	if os.Getenv("CAIRN_CS_BENCH") != "1" {
		t.Skip("a benchmark: CAIRN_CS_BENCH=1 runs it")
	}
	n, rounds := envInt("CAIRN_CS_BENCH_N", 20000), envInt("CAIRN_CS_BENCH_ROUNDS", 2)
	rate := envInt("CAIRN_CS_BENCH_RATE", 0)
	stagger := os.Getenv("CAIRN_CS_BENCH_STAGGER") == "1"
	client, member := startOneMemberSetProc(t, t.TempDir())
	ctx := context.Background()
	type cost struct {
		wall, server, client time.Duration
		getMores             int64
	}
	getMores := func() int64 {
		var st struct {
			Opcounters struct{ Getmore int64 } `bson:"opcounters"`
		}
		if err := client.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Decode(&st); err != nil {
			t.Fatal(err)
		}
		return st.Opcounters.Getmore
	}
	// throughput inserts n documents into a new collection with streams
	// open on it and returns how long the inserts took, and the CPU time
	// the server and this process (writers and consumers) spent on them
	// and on delivering their events.
	throughput := func(name string, streams int) cost {
		coll := client.Database("bench").Collection(name)
		ok(t)(coll.InsertOne(ctx, bson.D{{Key: "_id", Value: -1}}))
		var wg sync.WaitGroup
		sctx, cancel := context.WithCancel(ctx)
		seen := make([]int, streams)
		// The latency under this load: each insert's acknowledgement, and
		// its event's arrival on each stream, as nanoseconds since epoch
		// (time.Time holds a pointer: 11 arrays of them made each of this
		// process's collections scan megabytes more with ten streams,
		// charging the harness's bookkeeping to the streams).
		epoch := time.Now()
		acked := make([]int64, n)
		arrived := make([][]int64, streams)
		batches := make([][]int64, streams) // when each batch's first event arrived
		// With CAIRN_CS_BENCH_STAGGER=1 the streams open one by one while
		// a writer inserts (ids below -1, not counted): each stream's
		// getMores start at another point of the flow, as streams opened
		// at different times do, not together at the first insert.
		warm := make(chan struct{})
		warmed := make(chan struct{})
		if stagger && streams > 0 {
			go func() {
				defer close(warmed)
				for id := -2; ; id-- {
					select {
					case <-warm:
						return
					default:
					}
					if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}}); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		} else {
			close(warmed)
		}
		for i := range streams {
			if stagger {
				time.Sleep(time.Duration(1+i%3) * time.Millisecond)
			}
			cs, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetMaxAwaitTime(100*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer cs.Close(context.Background())
				arrived[i] = make([]int64, n)
				last := 0 // events left in the batch before this event
				for cs.Next(sctx) {
					if last == 0 { // the first event of a batch
						batches[i] = append(batches[i], int64(time.Since(epoch)))
					}
					last = cs.RemainingBatchLength()
					if id, ok := cs.Current.Lookup("documentKey", "_id").AsInt64OK(); ok && id >= 0 && id < int64(n) {
						arrived[i][id] = int64(time.Since(epoch))
						seen[i]++
					}
				}
			}()
		}
		close(warm)
		<-warmed
		const writers = 8
		profiled := profileServer(t, name)
		dump(t, member.cmd.Process.Pid)
		server0, client0, gm0 := procCPU(t, member.cmd.Process.Pid), selfCPU(t), getMores()
		sw0, cw0 := procSwitches(member.cmd.Process.Pid), selfSwitches(t)
		start := time.Now()
		var ww sync.WaitGroup
		for w := range writers {
			ww.Add(1)
			go func() {
				defer ww.Done()
				for j := w; j < n; j += writers {
					if rate > 0 { // insert j is due at start + j/rate
						time.Sleep(time.Until(start.Add(time.Duration(j) * time.Second / time.Duration(rate))))
					}
					if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: j}, {Key: "v", Value: "a small document"}}); err != nil {
						t.Error(err)
						return
					}
					acked[j] = int64(time.Since(epoch))
				}
			}()
		}
		ww.Wait()
		el := time.Since(start)
		<-profiled
		// Let the consumers catch up, then stop them.
		deadline := time.Now().Add(60 * time.Second)
		for i := 0; i < streams && time.Now().Before(deadline); {
			if seen[i] >= n {
				i++
				continue
			}
			time.Sleep(50 * time.Millisecond)
		}
		c := cost{wall: el, server: procCPU(t, member.cmd.Process.Pid) - server0, client: selfCPU(t) - client0, getMores: getMores() - gm0}
		dump(t, member.cmd.Process.Pid)
		sw, cw := procSwitches(member.cmd.Process.Pid)-sw0, selfSwitches(t)-cw0
		cancel()
		wg.Wait()
		for i, s := range seen {
			if s < n {
				t.Errorf("stream %d saw %d of %d inserts", i, s, n)
			}
		}
		t.Logf("%s: %d inserts with %d streams open: %.0f inserts/s; CPU per insert: server %v, client %v; %.2f getMores per insert; voluntary context switches per insert: server %.2f, client %.2f",
			name, n, streams, float64(n)/el.Seconds(), c.server/time.Duration(n), c.client/time.Duration(n), float64(c.getMores)/float64(n),
			float64(sw)/float64(n), float64(cw)/float64(n))
		if streams > 0 {
			var lat []time.Duration
			for _, arr := range arrived {
				for j, at := range arr {
					if at != 0 && acked[j] != 0 {
						lat = append(lat, time.Duration(max(0, at-acked[j])))
					}
				}
			}
			if len(lat) > 0 {
				t.Logf("%s: commit (ack) → event delivered, every stream's events under this load: p50 %v p99 %v", name, percentile(lat, 0.5), percentile(lat, 0.99))
			}
			t.Logf("%s: batches that arrived together (the streams with a batch within 1 ms of each one): %.1f", name, together(batches, time.Millisecond))
		}
		return c
	}
	var none, ten cost
	add := func(sum *cost, c cost) {
		sum.wall, sum.server, sum.client = sum.wall+c.wall, sum.server+c.server, sum.client+c.client
	}
	for r := range rounds {
		if r%2 == 0 {
			add(&none, throughput(fmt.Sprintf("none%d", r), 0))
			add(&ten, throughput(fmt.Sprintf("ten%d", r), 10))
		} else {
			add(&ten, throughput(fmt.Sprintf("ten%d", r), 10))
			add(&none, throughput(fmt.Sprintf("none%d", r), 0))
		}
	}
	m := time.Duration(rounds * n)
	t.Logf("%d rounds: %.0f inserts/s with no stream, %.0f with 10: %.1f%% of the throughput without; "+
		"CPU per insert with no stream: server %v, client %v; with 10: server %v, client %v",
		rounds, float64(m)/none.wall.Seconds(), float64(m)/ten.wall.Seconds(), 100*none.wall.Seconds()/ten.wall.Seconds(),
		none.server/m, none.client/m, ten.server/m, ten.client/m)

	// Latency: one writer, one consumer; each insert's ack and send times
	// against its event's arrival.
	coll := client.Database("bench").Collection("latency")
	ok(t)(coll.InsertOne(ctx, bson.D{{Key: "_id", Value: -1}}))
	cs, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetMaxAwaitTime(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	l := min(n, 1000)
	arrived := make([]time.Time, l)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for k := 0; k < l && cs.Next(ctx); k++ {
			id, _ := cs.Current.Lookup("documentKey", "_id").AsInt64OK()
			arrived[id] = time.Now()
		}
	}()
	sent, acked := make([]time.Time, l), make([]time.Time, l)
	for j := range l {
		sent[j] = time.Now()
		ok(t)(coll.InsertOne(ctx, bson.D{{Key: "_id", Value: int64(j)}}))
		acked[j] = time.Now() // one writer, one insert at a time: not saturated
	}
	<-done
	var fromAck, fromSend []time.Duration
	for j := range l {
		fromAck = append(fromAck, max(0, arrived[j].Sub(acked[j])))
		fromSend = append(fromSend, arrived[j].Sub(sent[j]))
	}
	t.Logf("commit (ack) → event delivered: p50 %v p99 %v; insert sent → event delivered: p50 %v p99 %v (%d inserts)",
		percentile(fromAck, 0.5), percentile(fromAck, 0.99), percentile(fromSend, 0.5), percentile(fromSend, 0.99), l)
}

// together is the mean, over every stream's batches (their arrival times,
// nanoseconds), of the number of streams (its own too) with a batch that
// arrived within d of it: 1 when the streams' batches come one by one, the
// number of streams when they come together.
func together(batches [][]int64, d time.Duration) float64 {
	type arrival struct {
		at     int64
		stream int
	}
	var all []arrival
	for i, b := range batches {
		for _, at := range b {
			all = append(all, arrival{at, i})
		}
	}
	slices.SortFunc(all, func(a, b arrival) int { return int(a.at - b.at) })
	sum, lo := 0, 0
	for _, a := range all {
		for all[lo].at < a.at-int64(d) {
			lo++
		}
		near := map[int]bool{}
		for j := lo; j < len(all) && all[j].at <= a.at+int64(d); j++ {
			near[all[j].stream] = true
		}
		sum += len(near)
	}
	if len(all) == 0 {
		return 0
	}
	return float64(sum) / float64(len(all))
}

// percentile is d's p-quantile (d is sorted).
func percentile(d []time.Duration, p float64) time.Duration {
	slices.Sort(d)
	return d[int(p*float64(len(d)-1))]
}

// dump runs CAIRN_CS_BENCH_DUMP, if set, with {pid} the server's pid.
func dump(t *testing.T, pid int) {
	t.Helper()
	cmd := os.Getenv("CAIRN_CS_BENCH_DUMP")
	if cmd == "" {
		return
	}
	out, err := exec.Command("sh", "-c", strings.ReplaceAll(cmd, "{pid}", strconv.Itoa(pid))).CombinedOutput()
	if err != nil {
		t.Fatalf("CAIRN_CS_BENCH_DUMP: %v: %s", err, out)
	}
}

// profileServer saves the server's CPU profile of the next
// CAIRN_CS_BENCH_PROFILE_SECONDS as name.pprof in CAIRN_CS_BENCH_PROFILE
// (nothing when that is unset); the channel closes when it is saved.
func profileServer(t *testing.T, name string) <-chan struct{} {
	done := make(chan struct{})
	dir := os.Getenv("CAIRN_CS_BENCH_PROFILE")
	if dir == "" {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", os.Getenv("CAIRN_PPROF"), envInt("CAIRN_CS_BENCH_PROFILE_SECONDS", 2))
		resp, err := http.Get(url)
		if err != nil {
			t.Errorf("profile: %v", err)
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name+".pprof"), b, 0o644)
		}
		if err != nil {
			t.Errorf("profile: %v", err)
		}
	}()
	return done
}

// procCPU is the CPU time (user and system) process pid has used, from
// /proc (Linux).
func procCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command name (which may hold spaces, in parens):
	// utime and stime are the 12th and 13th, in clock ticks (100 a second).
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// procSwitches is the voluntary context switches of process pid's threads
// now running, from /proc (Linux): a thread blocking, then woken (the
// involuntary ones are the machine's load).
func procSwitches(pid int) int64 {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	var n int64
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // a thread gone meanwhile
		}
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && k == "voluntary_ctxt_switches" {
				c, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				n += c
			}
		}
	}
	return n
}

// selfSwitches is the voluntary context switches of this process's threads.
func selfSwitches(t *testing.T) int64 {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return ru.Nvcsw
}

// selfCPU is the CPU time this process has used.
func selfCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
