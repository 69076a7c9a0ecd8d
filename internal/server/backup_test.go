package server_test

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
)

// TestBackupUnderWrites: createBackup taken while four clients insert opens
// as a data directory holding every insert acknowledged before the command
// was sent (and only whole inserts: each document is there or not).
func TestBackupUnderWrites(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	coll := c.Database("test").Collection("c")
	ctx := context.Background()
	const writers = 4
	var (
		mu    sync.Mutex
		acked []int64 // acknowledged ids, in acknowledgement order
		next  atomic.Int64
		stop  atomic.Bool
		wg    sync.WaitGroup
	)
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				id := next.Add(1)
				if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "pad", Value: "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}}); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked = append(acked, id)
				mu.Unlock()
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	before := append([]int64(nil), acked...)
	mu.Unlock()
	dir := filepath.Join(t.TempDir(), "backup")
	var reply bson.M
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "createBackup", Value: 1}, {Key: "backupDir", Value: dir}}).Decode(&reply); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // writes go on after the backup
	stop.Store(true)
	wg.Wait()
	if len(before) == 0 {
		t.Fatal("no write was acknowledged before the backup")
	}

	eng, err := engine.Open(dir, engine.Options{Logger: discard()})
	if err != nil {
		t.Fatalf("the backup does not open: %v", err)
	}
	defer eng.Close()
	var missing []int64
	for _, id := range before {
		key := bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, id)}
		raw, found, err := eng.Get(nil, engine.Namespace{DB: "test", Coll: "c"}, key)
		if err != nil {
			t.Fatal(err)
		}
		if !found {
			missing = append(missing, id)
			continue
		}
		if v, _ := bsoncore.Document(raw).Lookup("pad").StringValueOK(); len(v) != 40 {
			t.Errorf("document %d is torn in the backup: %s", id, bsoncore.Document(raw))
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d of %d writes acknowledged before the backup are missing from it, e.g. %v", len(missing), len(before), missing[0])
	}
	t.Logf("%d writes acknowledged before the backup, %d in all; reply %v", len(before), len(acked), reply)
}
