package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn/internal/engine"
)

// lockedBuffer is a log sink safe for the engine's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// slowLines returns the "Slow query" lines logged since the last call.
func (l *lockedBuffer) slowLines(t *testing.T) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(l.b.String(), "\n") {
		if !strings.Contains(line, `"Slow query"`) {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %v: %s", err, line)
		}
		out = append(out, m)
	}
	l.b.Reset()
	return out
}

func newObservedEnv(t *testing.T) (*Session, *lockedBuffer, func(bson.D) bson.Raw) {
	t.Helper()
	sink := &lockedBuffer{}
	log := slog.New(slog.NewJSONHandler(sink, nil))
	eng, err := engine.Open(t.TempDir(), engine.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	env := NewEnv(eng, Config{}, log)
	t.Cleanup(func() { env.Close(); _ = eng.Close() })
	sess := &Session{Env: env, ConnID: 7, Remote: "127.0.0.1:5555"}
	run := func(cmd bson.D) bson.Raw {
		body, _ := bson.Marshal(append(cmd, bson.E{Key: "$db", Value: "p"}))
		req, err := NewRequest(body, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		return bson.Raw(Run(context.Background(), sess, req, nil))
	}
	return sess, sink, run
}

// TestSlowQueryLog checks the slow-operation line: written only past
// slowms, at info level, in MongoDB's shape with the figures of the
// command's plan.
func TestSlowQueryLog(t *testing.T) {
	sess, sink, run := newObservedEnv(t)
	docs := bson.A{}
	for i := range 50 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "a", Value: i % 5}})
	}
	run(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}})
	run(bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}}}}})
	sink.slowLines(t)

	run(bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: 3}}}})
	if got := sink.slowLines(t); len(got) != 0 {
		t.Fatalf("a fast find under slowms %d was logged: %v", sess.Env.Profiler.SlowMS(), got)
	}
	sess.Env.Profiler.SetSlowMS(-1) // every command is slow
	cases := []struct {
		name string
		cmd  bson.D
		want map[string]any // attr fields (numbers as JSON reads them)
	}{
		{"indexed find", bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: 3}}}},
			map[string]any{"type": "command", "ns": "p.c", "planSummary": "IXSCAN { a: 1 }", "keysExamined": 10.0, "docsExamined": 10.0, "nreturned": 10.0, "cursorExhausted": true, "remote": "127.0.0.1:5555", "protocol": "op_msg"}},
		{"collection scan", bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "b", Value: 1}}}},
			map[string]any{"planSummary": "COLLSCAN", "keysExamined": 0.0, "docsExamined": 50.0, "nreturned": 0.0}},
		{"first batch then getMore", bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 20}},
			map[string]any{"nreturned": 20.0, "docsExamined": 21.0}}, // one read ahead is held
		{"update", bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "b", Value: 1}}}}}, {Key: "multi", Value: true}}}}},
			map[string]any{"nMatched": 10.0, "nModified": 10.0}},
		{"delete", bson.D{{Key: "delete", Value: "c"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 0}}}, {Key: "limit", Value: 1}}}}},
			map[string]any{"ndeleted": 1.0}},
		{"failed command", bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "$nope", Value: 1}}}},
			map[string]any{"ok": 0.0, "errCode": 2.0, "errName": "BadValue"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run(c.cmd)
			lines := sink.slowLines(t)
			if len(lines) != 1 {
				t.Fatalf("want one Slow query line, got %d", len(lines))
			}
			l := lines[0]
			if l["level"] != "INFO" || l["c"] != "COMMAND" || l["id"] != 51803.0 || l["ctx"] != "conn7" {
				t.Errorf("line header %v", l)
			}
			attr, _ := l["attr"].(map[string]any)
			if _, ok := attr["command"].(map[string]any); !ok {
				t.Errorf("attr.command is not a document: %v", attr["command"])
			}
			if _, ok := attr["durationMillis"].(float64); !ok {
				t.Errorf("attr.durationMillis missing: %v", attr)
			}
			for k, v := range c.want {
				if attr[k] != v {
					t.Errorf("attr.%s = %v, want %v (attr %v)", k, attr[k], v, attr)
				}
			}
		})
	}
}

// TestLatencyBuckets checks the histogram's buckets against MongoDB's lower
// bounds: each latency falls in the bucket whose bound is the largest not
// above it.
func TestLatencyBuckets(t *testing.T) {
	for _, c := range []struct{ us, lower int64 }{
		{0, 1}, {1, 1}, {2, 2}, {3, 2}, {1023, 512}, {1024, 1024}, {2047, 1024},
		{2048, 2048}, {3071, 2048}, {3072, 3072}, {4095, 3072}, {4096, 4096},
		{6144, 6144}, {16384, 16384}, {49152, 49152}, {65535, 49152},
	} {
		if got := bucketMicros(bucketOf(c.us)); got != c.lower {
			t.Errorf("%dµs is in the bucket of %dµs, want %dµs", c.us, got, c.lower)
		}
	}
	for b := 1; b < histBuckets; b++ {
		if bucketMicros(b) <= bucketMicros(b-1) {
			t.Fatalf("bucket %d's bound %d is not above bucket %d's %d", b, bucketMicros(b), b-1, bucketMicros(b-1))
		}
	}
}

// TestProfileBound checks that the profiler's system.profile is a capped
// collection of profileCapBytes: after more entries than fit, the oldest
// are gone and the newest stay.
func TestProfileBound(t *testing.T) {
	_, _, run := newObservedEnv(t)
	run(bson.D{{Key: "profile", Value: 2}})
	pad := strings.Repeat("x", 4000)
	const n = 400 // about 1.6 MB of entries, each over 4 KB
	for i := range n {
		run(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: i}, {Key: "pad", Value: pad}}}}})
	}
	reply := run(bson.D{{Key: "collStats", Value: "system.profile"}})
	size, _ := reply.Lookup("size").AsInt64OK()
	count, _ := reply.Lookup("count").AsInt64OK()
	if capped, _ := reply.Lookup("capped").BooleanOK(); !capped || reply.Lookup("maxSize").AsInt64() != profileCapBytes {
		t.Errorf("system.profile is not capped at %d bytes: %s", profileCapBytes, reply)
	}
	if size > profileCapBytes || size < profileCapBytes/2 {
		t.Errorf("system.profile holds %d bytes in %d entries, want at most %d and more than half of it", size, count, profileCapBytes)
	}
	newest := run(bson.D{{Key: "find", Value: "system.profile"}, {Key: "sort", Value: bson.D{{Key: "_id", Value: -1}}}, {Key: "limit", Value: 1}})
	last, _ := newest.Lookup("cursor", "firstBatch", "0", "command", "documents", "0", "_id").AsInt64OK()
	if last != n-1 {
		t.Errorf("the newest entry is for _id %d, want %d: %s", last, n-1, newest)
	}
}

// BenchmarkPointReadObserved measures an _id find through Run (in process,
// no socket) with the profiler off and at level 1 with slowms 100 (no read
// is slow, so what is measured is the decision), the cost item 6 of issue
// 25 bounds: `go test -run XXX -bench PointReadObserved -count 6 ./internal/commands/`.
func BenchmarkPointReadObserved(b *testing.B) {
	sess := testSession(b, engine.Options{})
	env := sess.Env
	request := func(cmd bson.D) *Request { return testRequest(b, "b", cmd) }
	docs := bson.A{}
	for i := range 1000 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "name", Value: "user"}})
	}
	Run(context.Background(), sess, request(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}}), nil)
	find := request(bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 500}}}})
	for _, level := range []int{0, 1} {
		b.Run("level"+strconv.Itoa(level), func(b *testing.B) {
			if err := env.Profiler.Set("b", level, false, nil); err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, 0, 4096)
			b.ReportAllocs()
			for b.Loop() {
				Run(context.Background(), sess, find, buf[:0])
			}
		})
	}
}

// TestProfilerDefaultLevel: --profile sets every database's level; the
// profile command still sets one database's, back to the default too.
func TestProfilerDefaultLevel(t *testing.T) {
	sess, _, run := newObservedEnv(t)
	sess.Env.Profiler.SetDefaultLevel(2)
	if was := run(bson.D{{Key: "profile", Value: -1}}).Lookup("was").AsInt64(); was != 2 {
		t.Fatalf("profile -1 with --profile 2: was %d", was)
	}
	run(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}}}})
	n := run(bson.D{{Key: "count", Value: "system.profile"}}).Lookup("n").AsInt64()
	if n == 0 {
		t.Fatal("--profile 2 profiled nothing")
	}
	run(bson.D{{Key: "profile", Value: 0}})
	if level, _ := sess.Env.Profiler.Setting("p"); level != 0 {
		t.Fatalf("profile 0 over the default: level %d", level)
	}
	if level, _ := sess.Env.Profiler.Setting("other"); level != 2 {
		t.Fatalf("another database: level %d, want the default 2", level)
	}
	run(bson.D{{Key: "profile", Value: 2}})
	if len(sess.Env.Profiler.dbs) != 0 {
		t.Errorf("a database set back to the default is still listed: %v", sess.Env.Profiler.dbs)
	}
}
