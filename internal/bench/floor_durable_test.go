package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestDurableFloorSyncsBeforeReply checks the durable floor's log
// (invariant "The durable floor syncs before it answers"): every write
// returns only after a sync that covers it ended, its bytes are in the
// file by then, and writers waiting together share syncs (never more
// syncs than writes).
func TestDurableFloorSyncsBeforeReply(t *testing.T) {
	w, err := openFloorWALSized(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	const writers, each = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				rec := bsoncore.NewDocumentBuilder().AppendString("_id", fmt.Sprintf("w%d-%d", g, i)).Build()
				if err := w.write([]bsoncore.Document{rec}); err != nil {
					errs <- err
					return
				}
				w.mu.Lock()
				covered := w.durable
				w.mu.Unlock()
				data, err := os.ReadFile(w.f.Name())
				switch {
				case err != nil:
					errs <- err
				case covered == 0:
					errs <- fmt.Errorf("write %s returned before any sync ended", rec)
				case !bytes.Contains(data, rec):
					errs <- fmt.Errorf("write %s returned but the log does not hold it", rec)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if w.durable != writers*each || w.appended != writers*each {
		t.Errorf("durable %d, appended %d: want %d", w.durable, w.appended, writers*each)
	}
	if w.syncs == 0 || w.syncs > writers*each {
		t.Errorf("%d syncs for %d writes", w.syncs, writers*each)
	}
	t.Logf("%d writes, %d syncs", writers*each, w.syncs)
}

// TestDurableFloorRingWraps: a record that passes the ring's end goes on
// at its start, and the file never grows.
func TestDurableFloorRingWraps(t *testing.T) {
	const ring = 4096
	w, err := openFloorWALSized(t.TempDir(), ring)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	recs := make([]bsoncore.Document, 3)
	for i := range recs {
		recs[i] = bsoncore.NewDocumentBuilder().AppendString("v", strings.Repeat(string(rune('a'+i)), 1500)).Build()
		if err := w.write(recs[i : i+1]); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(w.f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != ring {
		t.Fatalf("the log is %d bytes, want the ring's %d", len(data), ring)
	}
	n0, n1 := len(recs[0]), len(recs[1])
	tail := ring - n0 - n1 // the third record's bytes before the wrap
	got := append(append([]byte(nil), data[n0+n1:]...), data[:len(recs[2])-tail]...)
	if !bytes.Equal(got, recs[2]) {
		t.Errorf("the wrapped record reads back as %q…", got[:20])
	}
	if !bytes.Equal(data[n0:n0+n1], recs[1]) {
		t.Error("the second record was overwritten")
	}
}

// TestDurableFloorEndToEnd runs a workload against the protocol floor and
// the durable floor and checks the report compares them: cairn against
// each, and the durable floor against the protocol floor.
func TestDurableFloorEndToEnd(t *testing.T) {
	quickWindows(t)
	ws, _ := ParseWorkloads([]string{"a"})
	rep, err := Run(context.Background(), Config{
		Workloads: ws, Records: 200, Ops: 400, Threads: 2, Batch: 50, Runs: 1, Seed: 5,
		Floors: []string{FloorProtocol, FloorDurable}, Self: testSelf, Version: "test",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Targets) != 3 || rep.Targets[2].Name != TargetFloorDurable {
		t.Fatalf("targets %+v, want cairn and two floors", rep.Targets)
	}
	for _, tr := range rep.Workloads[0].Targets {
		if tr.Failed != "" || len(tr.Runs) != 1 {
			t.Fatalf("workload a on %s: failed %q, %d runs", tr.Target, tr.Failed, len(tr.Runs))
		}
		checkRun(t, "workload a on "+tr.Target, "a", tr.Runs[0])
	}
	want := map[[2]string]bool{
		{TargetCairn, TargetFloorProtocol}:        false,
		{TargetCairn, TargetFloorDurable}:         false,
		{TargetFloorDurable, TargetFloorProtocol}: false,
	}
	for _, r := range rep.Workloads[0].Ratios {
		k := [2]string{r.Target, r.Against}
		if _, ok := want[k]; !ok || r.Throughput <= 0 {
			t.Errorf("unexpected ratio %+v", r)
		}
		want[k] = true
	}
	for k, seen := range want {
		if !seen {
			t.Errorf("no %s vs %s ratio", k[0], k[1])
		}
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "floor-durable ÷ floor-protocol") {
		t.Errorf("the ratio summary lacks the durable floor's row:\n%s", text.String())
	}
}

// TestDurableFloorNeedsSyncAlways: the durable floor syncs every write, so
// it is refused beside a server that does not.
func TestDurableFloorNeedsSyncAlways(t *testing.T) {
	ws, _ := ParseWorkloads([]string{"a"})
	_, err := Run(context.Background(), Config{Workloads: ws, Floors: []string{FloorDurable}, Sync: "off", Self: testSelf})
	if err == nil || !strings.Contains(err.Error(), "--floor durable") {
		t.Fatalf("err = %v, want the durable floor refused with --sync off", err)
	}
}
