package router

import (
	"testing"

	"github.com/cairndb/cairn/internal/hlc"
)

// TestSnapshotReplies: a snapshot read's reply answers its time as
// mongos's does (in the cursor of find and aggregate, replacing a
// shard's; at the top of distinct; nothing where there is no cursor),
// its readConcern carries the time, and the router's clock keeps the
// newest operationTime shards answer.
func TestSnapshotReplies(t *testing.T) {
	at := hlc.New(1700000000, 7)
	for _, c := range []struct {
		name, reply string
		path        []string // where atClusterTime must be; nil: nowhere
	}{
		{"find", `{"cursor": {"id": {"$numberLong": "0"}, "ns": "db.c", "firstBatch": [{"_id": 1}]}, "ok": 1}`, []string{"cursor", "atClusterTime"}},
		{"find", `{"cursor": {"firstBatch": [], "atClusterTime": {"$timestamp": {"t": 5, "i": 5}}, "id": {"$numberLong": "0"}}, "ok": 1}`, []string{"cursor", "atClusterTime"}},
		{"aggregate", `{"cursor": {"id": {"$numberLong": "0"}, "firstBatch": []}, "ok": 1}`, []string{"cursor", "atClusterTime"}},
		{"aggregate", `{"stages": [], "ok": 1}`, nil},
		{"distinct", `{"values": [1, 2], "ok": 1}`, []string{"atClusterTime"}},
	} {
		in := doc(t, c.reply)
		out := withAtClusterTime(c.name, in, at)
		if c.path == nil {
			if string(out) != string(in) {
				t.Errorf("%s %s: %s, want it unchanged", c.name, c.reply, out)
			}
			continue
		}
		ts, i, ok := out.Lookup(c.path...).TimestampOK()
		if !ok || hlc.New(ts, i) != at {
			t.Errorf("%s %s: %s, want %v at %v", c.name, c.reply, out, at, c.path)
		}
		if err := out.Validate(); err != nil || out.Lookup("ok").Type == 0 {
			t.Errorf("%s: %s lost its fields", c.name, out)
		}
	}
	rc := readConcernAt(doc(t, `{"level": "snapshot", "atClusterTime": {"$timestamp": {"t": 1, "i": 1}}}`), at)
	if ts, i, _ := rc.Lookup("atClusterTime").TimestampOK(); hlc.New(ts, i) != at || rc.Lookup("level").StringValue() != "snapshot" {
		t.Errorf("readConcernAt: %s", rc)
	}
	var clock clusterClock
	for _, r := range []string{
		`{"ok": 1, "operationTime": {"$timestamp": {"t": 10, "i": 2}}}`,
		`{"ok": 0, "code": 246, "operationTime": {"$timestamp": {"t": 10, "i": 9}}}`,
		`{"ok": 1, "operationTime": {"$timestamp": {"t": 9, "i": 50}}}`,
		`{"ok": 1}`,
	} {
		clock.observe(doc(t, r))
	}
	clock.observe(nil)
	if got := clock.now(); got != hlc.New(10, 9) {
		t.Errorf("the router's cluster time %v, want the newest answered, 10:9", got)
	}
}
