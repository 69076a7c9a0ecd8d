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
// its last entry behind the store's back (its record zeroed) fails the next save with the
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
	// Entry 6's record overwritten with zeros in its segment.
	loc := s.seg.locs[6-s.seg.first]
	if _, err := loc.seg.r.WriteAt(make([]byte, loc.n), loc.off); err != nil {
		t.Fatal(err)
	}
	v := violation(func() {
		s.Save(&pb.HardState{Term: proto.Uint64(2), Commit: proto.Uint64(3)}, nil, nil, true)
	})
	if v == nil || v.Invariant != "Contiguous log" {
		t.Fatalf("violation %v, want \"Contiguous log\"", v)
	}
}

// TestCommitIndexNotStoredCheckFires: with the invariants tag, a stored
// hard state of an older term (written behind the store's back) fails the
// next save that writes, with the invariant's name.
func TestCommitIndexNotStoredCheckFires(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	if err := s.Save(&pb.HardState{Term: proto.Uint64(3), Vote: proto.Uint64(1), Commit: proto.Uint64(0)}, ents(3, 1, 2), nil, true); err != nil {
		t.Fatal(err)
	}
	old, _ := proto.Marshal(&pb.HardState{Term: proto.Uint64(2), Vote: proto.Uint64(1)})
	if err := s.db.Set(keyHardState, old, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	// Entries and a new commit index in the same term: the hard state is
	// not written, so the stale one stays.
	v := violation(func() {
		s.Save(&pb.HardState{Term: proto.Uint64(3), Vote: proto.Uint64(1), Commit: proto.Uint64(2)}, ents(3, 3, 4), nil, true)
	})
	if v == nil || v.Invariant != "Commit index not stored" {
		t.Fatalf("violation %v, want \"Commit index not stored\"", v)
	}
}

// violation runs f and returns the invariant violation it panicked with
// (nil: none); any other panic goes on.
func violation(f func()) (v *invariants.Violation) {
	defer func() {
		if r := recover(); r != nil {
			err, _ := r.(error)
			if !errors.As(err, &v) {
				panic(r)
			}
		}
	}()
	f()
	return nil
}
