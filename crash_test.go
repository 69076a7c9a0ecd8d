package cairn_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn"
)

// The crash test checks "acknowledged writes survive kill -9": a child
// process inserts with durable acknowledgements and prints each acknowledged
// _id; the parent kills it with SIGKILL at a random moment, reopens the data
// directory and requires every printed _id to be there, round after round on
// the same directory. `make soak` runs many more rounds.

const crashChildEnv = "CAIRN_CRASH_CHILD_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir, os.Getenv("CAIRN_CRASH_ROUND"))
		return
	}
	os.Exit(m.Run())
}

// crashChild inserts until killed: four writers of single documents and one
// of 50-document batches, printing "ack <id>" after each acknowledgement.
func crashChild(dir, round string) {
	db, err := cairn.Open(dir, nil)
	if err != nil {
		fmt.Println("open error:", err)
		os.Exit(3)
	}
	coll := db.Database("crash").Collection("docs")
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	ack := func(ids ...string) {
		mu.Lock()
		for _, id := range ids {
			fmt.Fprintf(out, "ack %s\n", id)
		}
		out.Flush()
		mu.Unlock()
	}
	fmt.Fprintln(out, "ready")
	out.Flush()
	ctx := context.Background()
	for w := range 4 {
		go func() {
			for n := 0; ; n++ {
				id := fmt.Sprintf("r%s-w%d-%d", round, w, n)
				if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "pad", Value: strings.Repeat("x", 200)}}); err != nil {
					fmt.Println("insert error:", err)
					os.Exit(4)
				}
				ack(id)
			}
		}()
	}
	for n := 0; ; n++ {
		docs := make([]any, 50)
		ids := make([]string, 50)
		for i := range docs {
			ids[i] = fmt.Sprintf("r%s-batch%d-%d", round, n, i)
			docs[i] = bson.D{{Key: "_id", Value: ids[i]}, {Key: "n", Value: i}}
		}
		if _, err := coll.InsertMany(ctx, docs); err != nil {
			fmt.Println("insert error:", err)
			os.Exit(4)
		}
		ack(ids...)
	}
}

func TestCrashKeepsAcknowledgedWrites(t *testing.T) {
	rounds := 20
	if s := os.Getenv("CAIRN_CRASH_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("CAIRN_CRASH_ROUNDS=%q: %v", s, err)
		}
		rounds = n
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	dir := t.TempDir()
	var acked []string
	for round := range rounds {
		ids := runAndKill(t, dir, round, time.Duration(20+rng.IntN(300))*time.Millisecond)
		acked = append(acked, ids...)
		missing := verifyPresent(t, dir, acked)
		if len(missing) > 0 {
			t.Fatalf("round %d (seed %d): %d of %d acknowledged documents lost after kill -9, e.g. %v",
				round, seed, len(missing), len(acked), missing[:min(5, len(missing))])
		}
	}
	if len(acked) == 0 {
		t.Fatal("the child never acknowledged a write; the test proved nothing")
	}
	t.Logf("%d rounds, %d acknowledged documents, none lost", rounds, len(acked))
}

// runAndKill starts the child on dir, lets it write for d after it is ready,
// kills it with SIGKILL and returns the ids it acknowledged.
func runAndKill(t *testing.T, dir string, round int, d time.Duration) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, "CAIRN_CRASH_ROUND="+strconv.Itoa(round))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var ids []string
	var deadline <-chan time.Time
	startTimeout := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				_ = cmd.Wait()
				t.Fatalf("round %d: child exited on its own: %v", round, cmd.ProcessState)
			}
			switch {
			case line == "ready":
				deadline = time.After(d)
			case strings.HasPrefix(line, "ack "):
				ids = append(ids, strings.TrimPrefix(line, "ack "))
			default:
				t.Fatalf("round %d: child said %q", round, line)
			}
		case <-startTimeout:
			if deadline == nil {
				_ = cmd.Process.Kill()
				t.Fatalf("round %d: child not ready after 30s", round)
			}
		case <-deadline:
			_ = cmd.Process.Signal(syscall.SIGKILL)
			// Acknowledgements printed before the kill still count: drain them.
			for line := range lines {
				if strings.HasPrefix(line, "ack ") {
					ids = append(ids, strings.TrimPrefix(line, "ack "))
				}
			}
			_ = cmd.Wait()
			return ids
		}
	}
}

func verifyPresent(t *testing.T, dir string, ids []string) (missing []string) {
	t.Helper()
	db, err := cairn.Open(dir, nil)
	if err != nil {
		t.Fatalf("reopen after kill -9: %v", err)
	}
	defer db.Close()
	ctx := context.Background()
	cur, err := db.Database("crash").Collection("docs").Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close(ctx)
	present := map[string]bool{}
	for cur.Next(ctx) {
		present[cur.Current.Lookup("_id").StringValue()] = true
	}
	if err := cur.Err(); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if !present[id] {
			missing = append(missing, id)
		}
	}
	return missing
}
