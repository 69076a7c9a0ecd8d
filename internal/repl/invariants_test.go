//go:build invariants

package repl

import (
	"errors"
	"testing"

	"github.com/cairndb/cairn/internal/invariants"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// TestContiguousLogCheckFires: with the invariants tag, a log that lost
// its last entry behind the store's back fails the next save with the
// invariant's name.
func TestContiguousLogCheckFires(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	if err := s.Bootstrap([]uint64{1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(nil, ents(2, 2, 6), nil, true); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Delete(entryKey(6), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	var v *invariants.Violation
	func() {
		defer func() {
			if r := recover(); r != nil {
				err, _ := r.(error)
				if !errors.As(err, &v) {
					panic(r)
				}
			}
		}()
		s.Save(&pb.HardState{Term: proto.Uint64(2), Commit: proto.Uint64(3)}, nil, nil, true)
	}()
	if v == nil || v.Invariant != "Contiguous log" {
		t.Fatalf("violation %v, want \"Contiguous log\"", v)
	}
}
