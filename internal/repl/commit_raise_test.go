package repl

import (
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// restartedSM is a state machine whose applied index survived a restart.
type restartedSM struct {
	*memSM
	applied uint64
}

func (s restartedSM) Applied() uint64 { return s.applied }

// TestRestartAppliedAboveCommit: a member whose state machine applied
// entries beyond the commit index its log saved (the commit index is saved
// without a sync; a kill -9 can lose it while the applied index survives)
// restarts, with the saved commit index raised to what it applied, where
// Raft would otherwise panic (applied out of range).
func TestRestartAppliedAboveCommit(t *testing.T) {
	log, err := OpenLogStore("raft", vfs.NewMem())
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	var ents []*pb.Entry
	for i := uint64(1); i <= 5; i++ {
		ents = append(ents, &pb.Entry{Term: proto.Uint64(1), Index: proto.Uint64(i), Type: pb.EntryNormal.Enum()})
	}
	if err := log.Save(&pb.HardState{Term: proto.Uint64(1), Vote: proto.Uint64(1), Commit: proto.Uint64(2)}, ents, nil, true); err != nil {
		t.Fatal(err)
	}
	_, err = NewNode(Config{ID: 1, Log: log, Transport: NewNetwork(1).Endpoint(1), Clock: NewManualClock(time.Unix(0, 0)), SM: restartedSM{newMemSM(), 4}})
	if err != nil {
		t.Fatal(err)
	}
	hs, _, err := log.InitialState()
	if err != nil || hs.GetCommit() != 4 {
		t.Fatalf("saved commit index %d (%v), want 4", hs.GetCommit(), err)
	}
}
