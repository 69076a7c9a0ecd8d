package repl

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

func ents(term uint64, lo, hi uint64) []*pb.Entry {
	var out []*pb.Entry
	for i := lo; i <= hi; i++ {
		out = append(out, &pb.Entry{Index: proto.Uint64(i), Term: proto.Uint64(term), Data: []byte{byte(i)}})
	}
	return out
}

func openMem(t *testing.T, fs vfs.FS) *LogStore {
	t.Helper()
	s, err := OpenLogStore("raft", fs)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// terms returns the term of every index in [lo, hi].
func terms(t *testing.T, s *LogStore, lo, hi uint64) []uint64 {
	t.Helper()
	var out []uint64
	for i := lo; i <= hi; i++ {
		tm, err := s.Term(i)
		if err != nil {
			t.Fatalf("term %d: %v", i, err)
		}
		out = append(out, tm)
	}
	return out
}

func TestLogStoreAppendReplaceReopen(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s := openMem(t, fs)
	if err := s.Bootstrap([]uint64{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name      string
		ents      []*pb.Entry
		wantErr   bool
		wantLast  uint64
		wantTerms []uint64 // of indexes 2..wantLast
	}{
		{"append", ents(2, 2, 6), false, 6, []uint64{2, 2, 2, 2, 2}},
		{"gap refused", ents(2, 8, 9), true, 6, []uint64{2, 2, 2, 2, 2}},
		{"below first refused", ents(2, 1, 1), true, 6, []uint64{2, 2, 2, 2, 2}},
		{"new leader replaces tail", ents(3, 4, 4), false, 4, []uint64{2, 2, 3}},
		{"extend", ents(3, 5, 7), false, 7, []uint64{2, 2, 3, 3, 3, 3}},
	}
	for _, st := range steps {
		err := s.Save(&pb.HardState{Term: proto.Uint64(3), Vote: proto.Uint64(2), Commit: proto.Uint64(3)}, st.ents, nil, true)
		if (err != nil) != st.wantErr {
			t.Fatalf("%s: err %v", st.name, err)
		}
		if last, _ := s.LastIndex(); last != st.wantLast {
			t.Fatalf("%s: last %d, want %d", st.name, last, st.wantLast)
		}
		if got := terms(t, s, 2, st.wantLast); !slices.Equal(got, st.wantTerms) {
			t.Fatalf("%s: terms %v, want %v", st.name, got, st.wantTerms)
		}
		s.checkContiguous()
	}
	if _, err := s.Term(8); !errors.Is(err, raft.ErrUnavailable) {
		t.Errorf("term beyond last: %v", err)
	}
	if _, err := s.Entries(2, 9, 1<<20); !errors.Is(err, raft.ErrUnavailable) {
		t.Errorf("entries beyond last: %v", err)
	}
	got, err := s.Entries(2, 8, 1<<20)
	if err != nil || len(got) != 6 || got[0].GetIndex() != 2 || got[5].GetIndex() != 7 {
		t.Fatalf("entries 2..7: %v %v", got, err)
	}
	if got, _ := s.Entries(2, 8, 1); len(got) != 1 {
		t.Errorf("maxSize 1 returned %d entries, want exactly 1", len(got))
	}

	// A commit-only change (Raft's MustSync false) is written unsynced: a
	// crash may take it back, which Raft tolerates.
	if err := s.Save(&pb.HardState{Term: proto.Uint64(3), Vote: proto.Uint64(2), Commit: proto.Uint64(7)}, nil, nil, false); err != nil {
		t.Fatal(err)
	}
	if hs, _, _ := s.InitialState(); hs.GetCommit() != 7 {
		t.Errorf("commit after an unsynced save: %d", hs.GetCommit())
	}

	// A crash keeps everything a synced Save returned for ("Log durable
	// before use").
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	s.Close()
	r := openMem(t, crashed)
	defer r.Close()
	hs, cs, _ := r.InitialState()
	// The hard state was written with the new term, before the entries of
	// its Save: its commit index is that of the log before them (1), so
	// that a crash between the two never leaves a commit index past the
	// log's end; the unsynced 7 did not survive.
	if hs.GetTerm() != 3 || hs.GetVote() != 2 || hs.GetCommit() != 1 {
		t.Errorf("hard state after crash: %v", hs)
	}
	if !slices.Equal(cs.GetVoters(), []uint64{1, 2, 3}) {
		t.Errorf("voters after crash: %v", cs.GetVoters())
	}
	if first, _ := r.FirstIndex(); first != 2 {
		t.Errorf("first after crash %d", first)
	}
	if got := terms(t, r, 1, 7); !slices.Equal(got, []uint64{1, 2, 2, 3, 3, 3, 3}) {
		t.Errorf("terms after crash %v", got)
	}
	if err := r.Bootstrap([]uint64{9}); err != nil {
		t.Fatal(err)
	}
	if _, cs, _ := r.InitialState(); !slices.Equal(cs.GetVoters(), []uint64{1, 2, 3}) {
		t.Errorf("bootstrap of a used log changed its voters to %v", cs.GetVoters())
	}
}

func TestLogStoreCompact(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s := openMem(t, fs)
	if err := s.Bootstrap([]uint64{1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(nil, ents(2, 2, 10), nil, true); err != nil {
		t.Fatal(err)
	}
	cs := &pb.ConfState{Voters: []uint64{1}}
	if err := s.Compact(6, cs, []byte("state@6"), 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(5, cs, nil, 0); !errors.Is(err, raft.ErrSnapOutOfDate) {
		t.Errorf("compact below the snapshot: %v", err)
	}
	if err := s.Compact(11, cs, nil, 0); err == nil {
		t.Errorf("compact beyond the last index accepted")
	}
	check := func(s *LogStore) {
		t.Helper()
		if first, _ := s.FirstIndex(); first != 7 {
			t.Errorf("first %d, want 7", first)
		}
		if _, err := s.Entries(6, 8, 1<<20); !errors.Is(err, raft.ErrCompacted) {
			t.Errorf("entries below first: %v", err)
		}
		if tm, err := s.Term(6); tm != 2 || err != nil {
			t.Errorf("term of the snapshot index: %d %v", tm, err)
		}
		if _, err := s.Term(5); !errors.Is(err, raft.ErrCompacted) {
			t.Errorf("term below the snapshot: %v", err)
		}
		snap, _ := s.Snapshot()
		if snap.GetMetadata().GetIndex() != 6 || string(snap.GetData()) != "state@6" {
			t.Errorf("snapshot %v", snap)
		}
		s.checkContiguous()
	}
	check(s)
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	s.Close()
	r := openMem(t, crashed)
	check(r)

	// A snapshot received from the leader replaces the whole log.
	snap := &pb.Snapshot{Data: []byte("state@20"), Metadata: &pb.SnapshotMetadata{
		Index: proto.Uint64(20), Term: proto.Uint64(4), ConfState: cs}}
	if err := r.Save(&pb.HardState{Term: proto.Uint64(4), Commit: proto.Uint64(20)}, nil, snap, true); err != nil {
		t.Fatal(err)
	}
	if first, last := must(r.FirstIndex()), must(r.LastIndex()); first != 21 || last != 20 {
		t.Errorf("after a snapshot: first %d last %d, want 21 20", first, last)
	}
	if err := r.Save(nil, ents(4, 21, 22), nil, true); err != nil {
		t.Fatal(err)
	}
	r.checkContiguous()
	r.Close()
}

func must(v uint64, _ error) uint64 { return v }

// TestLogStoreCompactKeepsTail: a compaction that keeps entries behind its
// snapshot serves them (and the term before them) until a later one drops
// them, across a crash; a received snapshot drops the kept tail too.
func TestLogStoreCompactKeepsTail(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s := openMem(t, fs)
	if err := s.Bootstrap([]uint64{1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(nil, ents(2, 2, 5), nil, true); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(nil, ents(3, 6, 20), nil, true); err != nil {
		t.Fatal(err)
	}
	cs := &pb.ConfState{Voters: []uint64{1}}
	type bounds struct{ first, prevTerm, snap uint64 }
	check := func(s *LogStore, want bounds) {
		t.Helper()
		first := must(s.FirstIndex())
		prev, err := s.Term(first - 1)
		snap, _ := s.Snapshot()
		got := bounds{first, prev, snap.GetMetadata().GetIndex()}
		if got != want || err != nil {
			t.Errorf("first, term before it, snapshot: %+v (%v), want %+v", got, err, want)
		}
		if _, err := s.Term(first - 2); first > 2 && !errors.Is(err, raft.ErrCompacted) {
			t.Errorf("term below the kept tail: %v", err)
		}
		if es, err := s.Entries(first, want.snap+1, 1<<20); err != nil || uint64(len(es)) != want.snap+1-first {
			t.Errorf("kept entries [%d, %d]: %d, %v", first, want.snap, len(es), err)
		}
		s.checkContiguous()
	}
	if err := s.Compact(10, cs, []byte("state@10"), 4); err != nil {
		t.Fatal(err)
	}
	check(s, bounds{first: 7, prevTerm: 3, snap: 10})
	// Keeping more than the log holds deletes nothing.
	if err := s.Compact(12, cs, []byte("state@12"), 100); err != nil {
		t.Fatal(err)
	}
	check(s, bounds{first: 7, prevTerm: 3, snap: 12})
	if err := s.Compact(18, cs, []byte("state@18"), 2); err != nil {
		t.Fatal(err)
	}
	check(s, bounds{first: 17, prevTerm: 3, snap: 18})
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	s.Close()
	r := openMem(t, crashed)
	check(r, bounds{first: 17, prevTerm: 3, snap: 18})
	snap := &pb.Snapshot{Data: []byte("state@30"), Metadata: &pb.SnapshotMetadata{
		Index: proto.Uint64(30), Term: proto.Uint64(5), ConfState: cs}}
	if err := r.Save(&pb.HardState{Term: proto.Uint64(5), Commit: proto.Uint64(30)}, nil, snap, true); err != nil {
		t.Fatal(err)
	}
	r.Close()
	r = openMem(t, crashed)
	if first, prev := must(r.FirstIndex()), must(r.Term(30)); first != 31 || prev != 5 {
		t.Errorf("after a received snapshot: first %d, term before it %d; want 31, 5", first, prev)
	}
	r.Close()
}

// TestLogStoreConfStateSurvivesReopen: the configuration of the last
// applied change is what a reopened store starts Raft from, when it is
// newer than the snapshot's ("Configuration survives restarts"): a group
// bootstrapped from configuration entries has no snapshot naming its
// members, and Raft does not apply again entries at or below the applied
// index.
func TestLogStoreConfStateSurvivesReopen(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s := openMem(t, fs)
	if _, cs, _ := s.InitialState(); len(cs.GetVoters()) != 0 {
		t.Fatalf("a new store's configuration: %v", cs)
	}
	if err := s.SetConfState(5, &pb.ConfState{Voters: []uint64{1, 2}, Learners: []uint64{3}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openMem(t, fs)
	_, cs, err := s.InitialState()
	if err != nil || fmt.Sprint(cs.GetVoters(), cs.GetLearners()) != "[1 2] [3]" {
		t.Fatalf("configuration after reopening: %v, %v", cs, err)
	}
}

// durableSM is a memSM whose applied index survives the restart, as the
// engine's does.
type durableSM struct {
	*memSM
	applied uint64
}

func (s durableSM) Applied() uint64 { return s.applied }

// TestRestartWithAppliedPastCommit: a commit-index-only HardState is
// written unsynced while the state machine syncs what it applies, so a
// crash can leave the state machine ahead of the stored commit index;
// the member restarts (Raft would panic on Applied above Commit) with the
// commit index raised to what it applied.
func TestRestartWithAppliedPastCommit(t *testing.T) {
	log, err := OpenLogStore("raft", vfs.NewMem())
	if err != nil {
		t.Fatal(err)
	}
	var ents []*pb.Entry
	for i := uint64(1); i <= 4; i++ {
		ents = append(ents, &pb.Entry{Term: proto.Uint64(1), Index: proto.Uint64(i), Type: pb.EntryNormal.Enum()})
	}
	if err := log.Save(&pb.HardState{Term: proto.Uint64(1), Vote: proto.Uint64(1), Commit: proto.Uint64(2)}, ents, nil, true); err != nil {
		t.Fatal(err)
	}
	n, err := NewNode(Config{ID: 1, Log: log, Transport: NewNetwork(1).Endpoint(1), Clock: NewManualClock(time.Unix(0, 0)),
		SM: durableSM{newMemSM(), 4}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	hs, _, err := log.InitialState()
	if err != nil || hs.GetCommit() != 4 {
		t.Fatalf("commit index %d (%v), want 4, the state machine's applied index", hs.GetCommit(), err)
	}
}

// TestLogStoreCommitNotStored checks "Commit index not stored": a Ready
// whose hard state changed only in its commit index writes nothing of it
// (a commit-only Ready writes nothing at all), so every table the log
// flushes holds entries alone, and a reopened log starts from the commit
// index of the last term, vote or snapshot written; InitialState answers
// the newest in memory meanwhile.
func TestLogStoreCommitNotStored(t *testing.T) {
	fs := vfs.NewMem()
	s := openMem(t, fs)
	hs := func(term, vote, commit uint64) *pb.HardState {
		return &pb.HardState{Term: proto.Uint64(term), Vote: proto.Uint64(vote), Commit: proto.Uint64(commit)}
	}
	walBytes := func() uint64 { return s.db.Metrics().WAL.BytesIn + uint64(s.seg.written) }
	steps := []struct {
		name       string
		hs         *pb.HardState
		ents       []*pb.Entry
		snap       *pb.Snapshot
		sync       bool
		writes     bool   // the batch reaches Pebble at all
		memCommit  uint64 // InitialState's commit after the Save
		openCommit uint64 // a reopened log's commit after the Save
	}{
		{"new term and entries", hs(2, 1, 0), ents(2, 1, 5), nil, true, true, 0, 0},
		{"commit only", hs(2, 1, 3), nil, nil, false, false, 3, 0},
		{"entries and a new commit", hs(2, 1, 5), ents(2, 6, 7), nil, true, true, 5, 0},
		{"vote in a new term", hs(3, 2, 7), nil, nil, true, true, 7, 7},
		{"commit only again", hs(3, 2, 8), nil, nil, false, false, 8, 7},
		{"snapshot in the same term", hs(3, 2, 20), nil, &pb.Snapshot{Metadata: &pb.SnapshotMetadata{
			Index: proto.Uint64(20), Term: proto.Uint64(3), ConfState: &pb.ConfState{Voters: []uint64{1, 2, 3}}}}, true, true, 20, 20},
	}
	for _, st := range steps {
		before := walBytes()
		if err := s.Save(st.hs, st.ents, st.snap, st.sync); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if wrote := walBytes() > before; wrote != st.writes {
			t.Errorf("%s: wrote to the log (its Pebble WAL or a segment) %v, want %v", st.name, wrote, st.writes)
		}
		if got, _, _ := s.InitialState(); got.GetCommit() != st.memCommit || got.GetTerm() != st.hs.GetTerm() {
			t.Errorf("%s: in memory %v, want term %d commit %d", st.name, got, st.hs.GetTerm(), st.memCommit)
		}
		s.Close()
		s = openMem(t, fs)
		if got, _, _ := s.InitialState(); got.GetCommit() != st.openCommit || got.GetTerm() != st.hs.GetTerm() || got.GetVote() != st.hs.GetVote() {
			t.Errorf("%s: reopened %v, want term %d vote %d commit %d", st.name, got, st.hs.GetTerm(), st.hs.GetVote(), st.openCommit)
		}
	}
	s.Close()
}

// TestSaveEncodesInPlace: Save encodes each entry straight into its batch
// and keeps the hard state without protobuf's reflection ("Entries
// encoded once into the batch"): what it stores reads back the same, the
// sizes the tail keeps are the encoded sizes, and a save of three entries
// with a new commit index allocates at most saveAllocs objects (1 to 3
// here; 7 to 9 when each entry had an encoding and a key of its own and
// the hard state was copied by proto.Clone).
func TestSaveEncodesInPlace(t *testing.T) {
	const saveAllocs = 4
	for _, tc := range []struct {
		name string
		size int // bytes of each entry's data
	}{
		{"empty entries", 0},
		{"small entries", 100},
		{"group-sized entries", 7000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := OpenLogStore("raft", vfs.NewMem())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// The entries and hard states of every save are made before,
			// so that only Save's own allocations are counted.
			type call struct {
				hs   *pb.HardState
				ents []*pb.Entry
			}
			var calls []call
			for next := uint64(1); len(calls) < 60; {
				ents := make([]*pb.Entry, 3)
				for i := range ents {
					d := make([]byte, tc.size)
					for j := range d {
						d[j] = byte(next) + byte(j)
					}
					ents[i] = &pb.Entry{Term: proto.Uint64(1), Index: proto.Uint64(next), Data: d}
					next++
				}
				calls = append(calls, call{&pb.HardState{Term: proto.Uint64(1), Vote: proto.Uint64(1), Commit: proto.Uint64(next - 1)}, ents})
			}
			n := 0
			save := func() {
				c := calls[n]
				n++
				if err := s.Save(c.hs, c.ents, nil, false); err != nil {
					t.Fatal(err)
				}
			}
			save()
			got, err := s.Entries(1, 4, math.MaxUint64)
			if err != nil {
				t.Fatal(err)
			}
			for i, e := range got {
				if e.GetIndex() != uint64(i+1) || len(e.GetData()) != tc.size || tc.size > 0 && e.GetData()[tc.size-1] != byte(i+1)+byte(tc.size-1) {
					t.Fatalf("entry %d read back as index %d with %d bytes", i+1, e.GetIndex(), len(e.GetData()))
				}
			}
			s.mu.Lock()
			for _, te := range s.tail {
				if want := uint64(proto.Size(te.e)); te.size != want {
					t.Errorf("tail entry %d kept with size %d, encoded in %d", te.e.GetIndex(), te.size, want)
				}
			}
			s.mu.Unlock()
			allocs := testing.AllocsPerRun(50, save)
			switch {
			case invariantsEnabled:
				t.Logf("Save of three entries: %.1f allocations with the invariants' checks (not bounded)", allocs)
			case allocs > saveAllocs:
				t.Errorf("Save of three entries allocated %.1f objects, want at most %d", allocs, saveAllocs)
			default:
				t.Logf("Save of three entries: %.1f allocations", allocs)
			}
			hs, _, err := s.InitialState()
			if err != nil {
				t.Fatal(err)
			}
			if want := calls[n-1].hs.GetCommit(); hs.GetCommit() != want || hs.GetTerm() != 1 || hs.GetVote() != 1 {
				t.Fatalf("hard state %v, want term 1, vote 1, commit %d", hs, want)
			}
		})
	}
}

// TestCloneHardState: cloneHardState's copy equals proto.Clone's, field
// presence included, and shares no field with the original.
func TestCloneHardState(t *testing.T) {
	for _, hs := range []*pb.HardState{
		{},
		{Term: proto.Uint64(3)},
		{Term: proto.Uint64(3), Vote: proto.Uint64(2)},
		{Term: proto.Uint64(3), Vote: proto.Uint64(0), Commit: proto.Uint64(17)},
		{Commit: proto.Uint64(1)},
	} {
		c := cloneHardState(hs)
		if !proto.Equal(c, proto.Clone(hs)) {
			t.Errorf("cloneHardState(%v) = %v", hs, c)
		}
		if hs.Term != nil && c.Term == hs.Term || hs.Commit != nil && c.Commit == hs.Commit {
			t.Errorf("cloneHardState(%v) shares a field with it", hs)
		}
	}
}
