package cairn_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cairndb/cairn/internal/invariants"
	"github.com/cairndb/cairn/internal/testnet"
)

// The wire crash test checks "acknowledged writes survive kill -9" from
// outside, as a user sees it: a real `cairn serve` process (built once per
// test run) on loopback, the official Go driver inserting, updating and
// deleting on a collection with a unique and a secondary index, SIGKILL at a
// random moment (one round in four during the start and recovery of the
// previous round's log), and after every restart a content check of every
// acknowledged write and the validate command over the wire. Both sync
// modes. `make test` runs CAIRN_WIRE_CRASH_ROUNDS=4 per mode (the default),
// `make soak` many more.

// cairnBin is the binary the tests that start real processes share: built
// once per test process (a link of ./cmd/cairn took 10–30 s under make
// test's load, and some twenty tests start processes), removed by TestMain.
var cairnBin struct {
	once      sync.Once
	dir, path string
	err       error
}

// buildCairnBinary returns the path of a `cairn` built from ./cmd/cairn,
// once per test run (dir is unused: the binary outlives any one test).
// CAIRN_TEST_BIN names a binary to use instead (a benchmark comparing two
// builds).
func buildCairnBinary(t *testing.T, _ string) string {
	t.Helper()
	if bin := os.Getenv("CAIRN_TEST_BIN"); bin != "" {
		return bin
	}
	cairnBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "cairn-testbin-")
		if err != nil {
			cairnBin.err = err
			return
		}
		cairnBin.dir, cairnBin.path = dir, filepath.Join(dir, "cairn")
		args := []string{"build", "-o", cairnBin.path}
		if invariants.Enabled { // the servers check their invariants too
			args = append(args, "-tags", "invariants")
		}
		if out, err := exec.Command("go", append(args, "./cmd/cairn")...).CombinedOutput(); err != nil {
			cairnBin.err = fmt.Errorf("go build ./cmd/cairn: %v\n%s", err, out)
		}
	})
	if cairnBin.err != nil {
		t.Fatal(cairnBin.err)
	}
	return cairnBin.path
}

// serveProc is a running `cairn serve` child.
type serveProc struct {
	cmd   *exec.Cmd
	addr  string
	ready chan string
	done  chan struct{}
}

// startServe starts cairn serve on dir; ready receives the listen address
// once the server says so.
func startServe(t *testing.T, bin, dir, syncMode string) *serveProc {
	t.Helper()
	return spawnServe(t, bin, "--port", "0", "--dbpath", dir, "--sync", syncMode)
}

// spawnServe starts `cairn serve` with args; ready receives the listen
// address once the server says so.
func spawnServe(t *testing.T, bin string, args ...string) *serveProc {
	t.Helper()
	p := &serveProc{ready: make(chan string, 1), done: make(chan struct{})}
	p.cmd = exec.Command(bin, append([]string{"serve"}, args...)...)
	p.cmd.Stderr = os.Stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var keep io.Writer = io.Discard // CAIRN_TEST_SERVE_LOGS: a directory that keeps every child's log
	if dir := os.Getenv("CAIRN_TEST_SERVE_LOGS"); dir != "" {
		name := strings.ReplaceAll(t.Name(), "/", "_")
		if f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.log", name, p.cmd.Process.Pid))); err == nil {
			keep = f
			go func() { <-p.done; f.Close() }()
		}
	}
	go func() {
		readServeLog(stdout, keep, func(line []byte) {
			var entry struct {
				Msg    string `json:"msg"`
				Listen string `json:"listen"`
				Level  string `json:"level"`
			}
			if json.Unmarshal(line, &entry) != nil {
				return
			}
			switch {
			case entry.Msg == "cairn is ready":
				p.ready <- entry.Listen
			case entry.Level == "ERROR":
				fmt.Fprintln(os.Stderr, "cairn serve:", string(line))
			}
		})
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.kill) // a failed test leaves no server behind
	return p
}

// readServeLog reads a server's log to its end, copying it to keep and
// handing each line of up to 1 MB to onLine. Every byte is read whatever
// the lines' length: a server whose stdout pipe fills blocks in its next
// log write (a slow bulk insert's log line holds its documents, many MB),
// which once hung migrations in TestShardMigrationKill.
func readServeLog(r io.Reader, keep io.Writer, onLine func([]byte)) {
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := br.ReadSlice('\n')
		keep.Write(line)
		if err == bufio.ErrBufferFull { // too long to be a line we look for
			for err == bufio.ErrBufferFull {
				line, err = br.ReadSlice('\n')
				keep.Write(line)
			}
			continue
		}
		if err != nil {
			return
		}
		onLine(line)
	}
}

// kill kills the server with SIGKILL and waits for it to exit; killing it
// again is a no-op.
func (p *serveProc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// waitReady waits for the ready line; it fails the test if the server exits
// or takes too long.
func (p *serveProc) waitReady(t *testing.T) string {
	t.Helper()
	select {
	case p.addr = <-p.ready:
		return p.addr
	case <-p.done:
		t.Fatalf("cairn serve exited before it was ready: %v", p.cmd.ProcessState)
	case <-time.After(60 * time.Second):
		p.kill()
		t.Fatal("cairn serve not ready after 60s")
	}
	return ""
}

func wireClient(t *testing.T, addr string) *mongo.Client {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + addr).
		SetServerSelectionTimeout(testnet.ConnectWait).SetRetryWrites(false).SetRetryReads(false))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestWireCrashKeepsAcknowledgedWrites(t *testing.T) {
	rounds := 4
	if v := os.Getenv("CAIRN_WIRE_CRASH_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("CAIRN_WIRE_CRASH_ROUNDS=%q: %v", v, err)
		}
		rounds = n
	}
	bin := buildCairnBinary(t, t.TempDir())
	for _, mode := range crashModes {
		t.Run("sync="+mode, func(t *testing.T) {
			seed := uint64(time.Now().UnixNano())
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewPCG(seed, 0))
			dir := t.TempDir()
			st := &crashState{inserted: map[string]bool{}, updated: map[string]int{}, deleted: map[string]bool{}, mayDelete: map[string]bool{}}
			for round := range rounds {
				if rng.IntN(4) == 0 && round > 0 {
					// Kill the server while it starts and recovers the
					// previous round's log.
					p := startServe(t, bin, dir, mode)
					time.Sleep(time.Duration(rng.IntN(80)) * time.Millisecond)
					p.kill()
				}
				p := startServe(t, bin, dir, mode)
				addr := p.waitReady(t)
				client := wireClient(t, addr)
				if errs := verifyWire(t, client, st); len(errs) > 0 {
					p.kill()
					t.Fatalf("sync %s, before round %d (seed %d): %d of %d acknowledged writes lost or wrong after kill -9, e.g. %v",
						mode, round, seed, len(errs), st.acks, errs[:min(5, len(errs))])
				}
				writeUntilKilled(t, client, p, round, time.Duration(150+rng.IntN(400))*time.Millisecond, st)
				_ = client.Disconnect(context.Background())
			}
			p := startServe(t, bin, dir, mode)
			client := wireClient(t, p.waitReady(t))
			errs := verifyWire(t, client, st)
			_ = client.Disconnect(context.Background())
			p.kill()
			if len(errs) > 0 {
				t.Fatalf("sync %s, after the last round (seed %d): %d of %d acknowledged writes lost or wrong after kill -9, e.g. %v",
					mode, seed, len(errs), st.acks, errs[:min(5, len(errs))])
			}
			if len(st.inserted) == 0 || len(st.updated) == 0 || len(st.deleted) == 0 {
				t.Fatalf("the server acknowledged %d inserts, %d updates and %d deletes; the test proved too little",
					len(st.inserted), len(st.updated), len(st.deleted))
			}
			t.Logf("sync %s: %d rounds over the wire, %d acknowledged writes (%d documents inserted, %d updated, %d deleted), none lost, validate valid after every restart",
				mode, rounds, st.acks, len(st.inserted), len(st.updated), len(st.deleted))
		})
	}
}

// wireDeleteEvery makes every so many updater operations a delete of one
// of its first four documents: often enough that even `make test`'s four
// short rounds on a loaded machine delete some, while the other sixteen
// stay to check updates.
const wireDeleteEvery = 23

// writeUntilKilled runs the writers of the embedded crash test's child
// through the driver — three of single inserts, one of 50-document batches,
// one updating and deleting — kills the server d after they start, and
// records what was acknowledged in st.
func writeUntilKilled(t *testing.T, client *mongo.Client, p *serveProc, round int, d time.Duration, st *crashState) {
	t.Helper()
	ctx := context.Background()
	coll := client.Database("crash").Collection("docs")
	_, err := coll.Indexes().CreateMany(ctx, []mongo.IndexModel{
		{Keys: bson.D{{Key: "u", Value: 1}}, Options: options.Index().SetName("u_1").SetUnique(true)},
		{Keys: bson.D{{Key: "n", Value: 1}}, Options: options.Index().SetName("n_1")},
	})
	if err != nil {
		p.kill()
		t.Fatalf("createIndexes: %v", err)
	}
	var mu sync.Mutex
	ack := func(lines ...string) {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range lines {
			if err := st.apply(l); err != nil {
				t.Error(err)
			}
		}
	}
	doc := func(id string, n int) bson.D {
		return bson.D{{Key: "_id", Value: id}, {Key: "n", Value: n}, {Key: "u", Value: id}, {Key: "pad", Value: crashPad(id)}}
	}
	var wg sync.WaitGroup
	// Every writer stops at its first error: the server is gone.
	for w := range 3 {
		wg.Go(func() {
			for n := 0; ; n++ {
				id := fmt.Sprintf("r%d-w%d-%d", round, w, n)
				if _, err := coll.InsertOne(ctx, doc(id, n)); err != nil {
					return
				}
				ack("i " + id)
			}
		})
	}
	wg.Go(func() {
		for n := 0; ; n++ {
			id := fmt.Sprintf("r%d-m%d", round, n%20)
			var err error
			switch {
			case n < 20:
				if _, err = coll.InsertOne(ctx, doc(id, n)); err == nil {
					ack("i " + id)
				}
			case n%wireDeleteEvery == 0 && n%20 < 4:
				mu.Lock()
				st.mayDelete[id] = true
				mu.Unlock()
				if _, err = coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}}); err == nil {
					ack("d " + id)
				}
			default:
				if _, err = coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: n}}}}); err == nil {
					ack(fmt.Sprintf("u %s %d", id, n))
				}
			}
			if err != nil {
				return
			}
		}
	})
	wg.Go(func() {
		for n := 0; ; n++ {
			docs := make([]any, 50)
			lines := make([]string, 50)
			for i := range docs {
				id := fmt.Sprintf("r%d-batch%d-%d", round, n, i)
				docs[i], lines[i] = doc(id, i), "i "+id
			}
			if _, err := coll.InsertMany(ctx, docs); err != nil {
				return
			}
			ack(lines...)
		}
	})
	time.Sleep(d)
	p.kill()
	wg.Wait()
}

// verifyWire reads every document back over the wire, lists every
// acknowledged write missing or wrong, and runs validate, which must report
// valid.
func verifyWire(t *testing.T, client *mongo.Client, st *crashState) []string {
	t.Helper()
	ctx := context.Background()
	db := client.Database("crash")
	cur, err := db.Collection("docs").Find(ctx, bson.D{})
	if err != nil {
		t.Fatalf("find after restart: %v", err)
	}
	present := map[string]bson.Raw{}
	for cur.Next(ctx) {
		present[cur.Current.Lookup("_id").StringValue()] = append(bson.Raw(nil), cur.Current...)
	}
	if err := cur.Err(); err != nil {
		t.Fatalf("find after restart: %v", err)
	}
	errs := st.check(present)
	if len(present) == 0 && st.acks == 0 {
		return errs // nothing written yet: the collection does not exist
	}
	res, err := db.RunCommand(ctx, bson.D{{Key: "validate", Value: "docs"}, {Key: "full", Value: true}}).Raw()
	if err != nil {
		t.Fatalf("validate after restart: %v", err)
	}
	if valid, _ := res.Lookup("valid").BooleanOK(); !valid {
		errs = append(errs, "validate: "+res.String())
	}
	return errs
}

// TestReadServeLogLongLines: a log line of many MB between two short ones
// is read through (the writer is never left blocked) and skipped; the
// short lines after it still arrive.
func TestReadServeLogLongLines(t *testing.T) {
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte("{\"msg\":\"a\"}\n"))
		pw.Write([]byte(strings.Repeat("x", 5<<20) + "\n"))
		pw.Write([]byte("{\"msg\":\"cairn is ready\"}\n"))
		pw.Close()
	}()
	var lines []string
	var kept strings.Builder
	readServeLog(pr, &kept, func(l []byte) { lines = append(lines, strings.TrimSpace(string(l))) })
	if fmt.Sprint(lines) != `[{"msg":"a"} {"msg":"cairn is ready"}]` {
		t.Errorf("lines %q", lines)
	}
	if kept.Len() != 12+5<<20+1+25 {
		t.Errorf("kept %d bytes, want every byte", kept.Len())
	}
}
