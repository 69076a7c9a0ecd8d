package commands

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// TestDiskFaultReplies checks what a client gets once the disk fails the
// write-ahead log (storage's "Stop on a failed log"): every write command
// answers ok: 0 (or a write error) with the failure's code and codeName,
// and acknowledged documents read as before.
func TestDiskFaultReplies(t *testing.T) {
	for _, c := range []struct {
		errno    syscall.Errno
		code     mongoerr.Code
		codeName string
	}{
		{syscall.EIO, mongoerr.ManualInterventionRequired, "ManualInterventionRequired"},
		{syscall.ENOSPC, mongoerr.OutOfDiskSpace, "OutOfDiskSpace"},
	} {
		t.Run(c.codeName, func(t *testing.T) {
			var on atomic.Bool
			fs := errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
				if on.Load() && op.Kind == errorfs.OpFileWrite && strings.HasSuffix(op.Path, ".log") {
					return c.errno
				}
				return nil
			}))
			log := slog.New(slog.DiscardHandler)
			eng, err := engine.Open("db", engine.Options{FS: fs, Logger: log})
			if err != nil {
				t.Fatal(err)
			}
			env := NewEnv(eng, Config{}, log)
			defer func() { env.Close(); _ = eng.Close() }()
			sess := &Session{Env: env}
			run := func(cmd bson.D) bson.Raw {
				body, _ := bson.Marshal(append(cmd, bson.E{Key: "$db", Value: "t"}))
				req, err := NewRequest(body, "", nil)
				if err != nil {
					t.Fatal(err)
				}
				return bson.Raw(Run(context.Background(), sess, req, nil))
			}
			insert := bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}}}}
			if ok := run(insert).Lookup("ok").Double(); ok != 1 {
				t.Fatal("insert before the fault failed")
			}
			on.Store(true)
			for _, cmd := range []bson.D{
				{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 2}}}}},
				{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}}}}}},
				{{Key: "delete", Value: "c"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{}}, {Key: "limit", Value: 0}}}}},
				{{Key: "create", Value: "other"}},
			} {
				reply := run(cmd)
				code, _ := reply.Lookup("code").Int32OK()
				name, _ := reply.Lookup("codeName").StringValueOK()
				if we, ok := reply.Lookup("writeErrors").ArrayOK(); ok {
					// writeErrors carry a code only, as MongoDB's do.
					code, _ = we.Index(0).Document().Lookup("code").Int32OK()
					name = c.codeName
				}
				if mongoerr.Code(code) != c.code || name != c.codeName {
					t.Errorf("%s after the log failed: %s; want code %d (%s)", cmd[0].Key, reply, c.code, c.codeName)
				}
				on.Store(false) // the store stays stopped without the fault
			}
			// The acknowledged document reads as before. The failed insert may
			// read too: Pebble made it visible before its log write failed
			// (RELIABILITY.md, "Known gaps").
			reply := run(bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 1}}}})
			if n := len(mustArray(t, reply.Lookup("cursor", "firstBatch"))); n != 1 {
				t.Fatalf("find of the acknowledged document after the log failed: %s", reply)
			}
		})
	}
}

func mustArray(t *testing.T, v bson.RawValue) []bson.RawValue {
	t.Helper()
	a, ok := v.ArrayOK()
	if !ok {
		t.Fatalf("not an array: %s", v)
	}
	vals, _ := a.Values()
	return vals
}
