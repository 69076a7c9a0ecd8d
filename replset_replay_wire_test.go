package cairn_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestReplicaSetReplaysUnflushedGroups: a member's data store keeps no
// write-ahead log of its own (storage's "The Raft log is the member's
// WAL"), so majority-acknowledged writes that no memtable flush reached
// live only in the members' Raft logs. Every member is killed with
// SIGKILL right after them — none can send the others what they lost —
// and restarted; each must hold every acknowledged write again, replayed
// from its own log. Fails with the replay removed (a member that starts
// with its applied index at its log's last index instead of the store's:
// the writes are gone from every member).
func TestReplicaSetReplaysUnflushedGroups(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts three servers")
	}
	rs := startReplSet(t)
	hosts, members := rs.hosts, rs.members
	ctx := context.Background()
	coll := rs.client(t).Database("app").Collection("items")
	// A few hundred small documents: far below a memtable (the members
	// run with --cacheSizeGB 0.25), so nothing flushes them.
	const n = 300
	for i := range n {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "v", Value: i * 7}}); err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
	}
	// Every member has applied them (a majority acknowledged each; the
	// third applies within its commit notice): read each directly.
	counts := func(want int64, within time.Duration) error {
		deadline := time.Now().Add(within)
		for i, h := range hosts {
			dc := directClient(t, h)
			for {
				got, err := dc.Database("app").Collection("items").CountDocuments(ctx, bson.D{})
				if err == nil && got == want {
					break
				}
				if time.Now().After(deadline) {
					dc.Disconnect(ctx)
					return fmt.Errorf("member %d (%s) holds %d documents (%v), want %d", i, h, got, err, want)
				}
				time.Sleep(50 * time.Millisecond)
			}
			dc.Disconnect(ctx)
		}
		return nil
	}
	if err := counts(n, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, m := range members {
		m.kill()
	}
	for i, m := range members {
		members[i] = startMember(t, rs.bin, m.dir, m.port)
	}
	waitHealthy(t, hosts, 3)
	if err := counts(n, 30*time.Second); err != nil {
		t.Fatalf("after every member was killed and restarted: %v", err)
	}
	// And with the right contents, on every member.
	for i, h := range hosts {
		dc := directClient(t, h)
		cur, err := dc.Database("app").Collection("items").Find(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		var docs []struct {
			ID int `bson:"_id"`
			V  int `bson:"v"`
		}
		if err := cur.All(ctx, &docs); err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			if d.V != d.ID*7 {
				t.Errorf("member %d: document %d holds v %d, want %d", i, d.ID, d.V, d.ID*7)
			}
		}
		dc.Disconnect(ctx)
	}
}
