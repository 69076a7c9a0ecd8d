package engine

import (
	"log/slog"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// TestFailedLogStopsWrites checks storage's "Stop on a failed log" from the
// engine's side: once the disk fails the log, an insert, a replace and a
// collection creation each answer the MongoDB code of the failure, reads of
// acknowledged documents go on, and a restart on a healthy disk writes again.
func TestFailedLogStopsWrites(t *testing.T) {
	for _, c := range []struct {
		errno syscall.Errno
		code  mongoerr.Code
	}{{syscall.EIO, mongoerr.ManualInterventionRequired}, {syscall.ENOSPC, mongoerr.OutOfDiskSpace}} {
		t.Run(c.errno.Error(), func(t *testing.T) {
			mem := vfs.NewMem()
			var on atomic.Bool
			fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
				if on.Load() && op.Kind == errorfs.OpFileWrite && strings.HasSuffix(op.Path, ".log") {
					return c.errno
				}
				return nil
			}))
			quiet := slog.New(slog.DiscardHandler)
			e, err := Open("db", Options{FS: fs, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			ns := Namespace{"db", "c"}
			doc := func(id int) bsoncore.Document { d, _ := bson.Marshal(bson.D{{Key: "_id", Value: id}}); return d }
			if _, err := e.Insert(ns, []bsoncore.Document{doc(1)}, true); err != nil {
				t.Fatal(err)
			}
			on.Store(true)
			_, err = e.Insert(ns, []bsoncore.Document{doc(2)}, true)
			if got := mongoerr.CodeOf(err); got != c.code {
				t.Fatalf("insert on a failing log: %v (code %d), want code %d", err, got, c.code)
			}
			on.Store(false)
			for what, err := range map[string]error{
				"insert":  second(e.Insert(ns, []bsoncore.Document{doc(3)}, true)),
				"replace": second(e.Replace(ns, doc(1).Lookup("_id"), doc(1))),
				"create":  e.CreateCollection(Namespace{"db", "other"}, nil),
			} {
				if got := mongoerr.CodeOf(err); got != c.code {
					t.Errorf("%s after the log failed: %v (code %d), want code %d", what, err, got, c.code)
				}
			}
			if _, found, err := e.Get(nil, ns, doc(1).Lookup("_id")); err != nil || !found {
				t.Fatalf("read of an acknowledged document after the log failed: found %v, %v", found, err)
			}
			_ = e.Close()
			e, err = Open("db", Options{FS: mem, Logger: quiet})
			if err != nil {
				t.Fatalf("restart on a healthy disk: %v", err)
			}
			defer e.Close()
			if _, found, _ := e.Get(nil, ns, doc(1).Lookup("_id")); !found {
				t.Fatal("acknowledged document lost")
			}
			if _, err := e.Insert(ns, []bsoncore.Document{doc(4)}, true); err != nil {
				t.Fatalf("insert after the restart: %v", err)
			}
		})
	}
}

func second[T any](_ T, err error) error { return err }
