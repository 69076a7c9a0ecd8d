package commands

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn/internal/engine"
)

// TestJournaledWriteConcern: in the interval sync mode (an hour here, so
// the periodic sync never runs during the test) a write whose writeConcern
// asks for the journal (j or fsync, true or a non-zero number) is durable
// when its reply arrives; one that does not ask is not synced for it.
func TestJournaledWriteConcern(t *testing.T) {
	sess := testSession(t, engine.Options{FS: vfs.NewMem(), SyncInterval: time.Hour})
	eng := sess.Env.Engine
	id := 0
	for _, tc := range []struct {
		wc      bson.D
		durable bool
	}{
		{nil, false},
		{bson.D{{Key: "w", Value: 1}}, false},
		{bson.D{{Key: "j", Value: false}}, false},
		{bson.D{{Key: "w", Value: 1}, {Key: "j", Value: true}}, true},
		{bson.D{{Key: "j", Value: 1}}, true},
		{bson.D{{Key: "fsync", Value: true}}, true},
		{bson.D{{Key: "w", Value: "majority"}, {Key: "j", Value: true}}, true},
	} {
		id++
		before := time.Now()
		cmd := bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: id}}}}}
		if tc.wc != nil {
			cmd = append(cmd, bson.E{Key: "writeConcern", Value: tc.wc})
		}
		req := testRequest(t, "t", cmd)
		reply := bson.Raw(Run(context.Background(), sess, req, nil))
		if reply.Lookup("ok").Double() != 1 || reply.Lookup("n").Int32() != 1 {
			t.Fatalf("writeConcern %v: %s", tc.wc, reply)
		}
		if durable := !eng.Storage().SyncedBefore().Before(before); durable != tc.durable {
			t.Errorf("writeConcern %v: durable at the reply = %v, want %v", tc.wc, durable, tc.durable)
		}
	}
}
