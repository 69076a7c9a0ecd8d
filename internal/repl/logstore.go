package repl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Keys of the Raft log's own Pebble instance, which holds everything but
// the entries (those are in segments, seglog.go; "e"+index keys are only
// read, to migrate a log of the earlier layout).
var (
	keyHardState = []byte("h")
	keySnapshot  = []byte("s") // the newest snapshot: metadata and data
	// keyConfState holds the configuration as of the last applied
	// configuration change: its index (8 bytes big-endian), then the
	// marshalled ConfState ("Configuration survives restarts").
	keyConfState = []byte("c")
	// keyTruncated holds where the log was truncated when that is below
	// the snapshot (Compact keeps a tail of entries behind its snapshot):
	// the index and term of the last deleted entry, 8 bytes big-endian
	// each. Absent, or not below the snapshot's index, the log starts
	// right after the snapshot.
	keyTruncated = []byte("t")
	// keyValidSeg holds the sequence number (8 bytes big-endian) of the
	// first segment of entries that belongs to the log: a snapshot that
	// replaces the whole log stores it with the snapshot, and the
	// segments below it are removed (at once, or at the next open).
	keyValidSeg = []byte("g")
	// keyEntryPre prefixed each entry's key in the log of the versions
	// before the segments ("e"+bigendian(index)); an open migrates such
	// entries into a segment (migratePebbleEntries).
	keyEntryPre = byte('e')
)

func entryKey(i uint64) []byte {
	k := make([]byte, entryKeyLen)
	putEntryKey(k, i)
	return k
}

// entryKeyLen is the length of an entry's key.
const entryKeyLen = 9

// putEntryKey writes the key of entry i into k (entryKeyLen bytes).
func putEntryKey(k []byte, i uint64) {
	k[0] = keyEntryPre
	binary.BigEndian.PutUint64(k[1:], i)
}

// cloneHardState copies hs, each field present exactly when it is in hs
// (what proto.Clone gives a HardState, without its reflection: Save keeps
// a copy of nearly every Ready's hard state, whose commit index moves).
func cloneHardState(hs *pb.HardState) *pb.HardState {
	// One allocation: the message and its fields' values together.
	c := &struct {
		hs                 pb.HardState
		term, vote, commit uint64
	}{}
	if hs.Term != nil {
		c.term = *hs.Term
		c.hs.Term = &c.term
	}
	if hs.Vote != nil {
		c.vote = *hs.Vote
		c.hs.Vote = &c.vote
	}
	if hs.Commit != nil {
		c.commit = *hs.Commit
		c.hs.Commit = &c.commit
	}
	return &c.hs
}

// LogStore is the Raft log of one member — its entries in segment files,
// the rest in its own Pebble instance ("Entries in segments"): it
// implements raft.Storage for the library and the writes the node loop
// makes from each Ready.
//
// Its in-memory fields (first and last index, the snapshot) mirror what
// is on disk and are changed only after the synced writes that change the
// disk returned ("Log durable before use").
type LogStore struct {
	db *pebble.DB
	// seg holds the entries ("Entries in segments").
	seg *segLog

	// wmu serialises the writers that change the bounds (Save on the
	// node's appender, Compact on the node loop) across their commits;
	// mu guards the fields below and is never held across a commit, so
	// the node loop reads the log (Term, Entries) while the appender
	// syncs ("Log written off the loop").
	wmu   sync.Mutex
	mu    sync.Mutex
	hs    *pb.HardState
	snap  *pb.Snapshot // the newest snapshot
	first uint64       // first index held: snapshot index + 1, or lower when Compact kept a tail
	last  uint64       // last index held; first-1 when the log is empty
	// prevTerm is the term of the entry at first-1 (the snapshot's term
	// when the log starts right after it).
	prevTerm uint64
	// conf is the configuration as of the applied configuration change
	// at confIndex (SetConfState); nil before the first.
	conf      *pb.ConfState
	confIndex uint64
	// tail holds the newest entries written, contiguous and ending at
	// last (empty, or tail[0] at or above first is not promised: Entries
	// and Term check first before they look here), so the committed
	// entries a Ready applies, and the appends a leader sends, are read
	// from memory rather than by a Pebble iterator that seeks into every
	// table of the log ("Recent entries in memory").
	tail []tailEntry
	// sizes and locScratch are Save's scratch: the encoded sizes of the
	// entries it writes, and where they are (under wmu).
	sizes      []int
	locScratch []segLoc
}

// tailEntry is an entry of LogStore.tail with its encoded size.
type tailEntry struct {
	e    *pb.Entry
	size uint64
}

// maxTail bounds LogStore.tail.
const maxTail = 1024

// keepTail records ents, just written to the log (a snapshot, when
// newSnap, having emptied it first), sizes[i] the encoded size of ents[i]
// (Save computed them). Under s.mu.
func (s *LogStore) keepTail(ents []*pb.Entry, sizes []int, newSnap bool) {
	if newSnap {
		s.tail = s.tail[:0]
	}
	if len(ents) == 0 {
		return
	}
	lo := ents[0].GetIndex()
	if n := len(s.tail); n > 0 && lo >= s.tail[0].e.GetIndex() && lo <= s.tail[n-1].e.GetIndex()+1 {
		s.tail = s.tail[:lo-s.tail[0].e.GetIndex()] // a new leader's entries replace the old tail
	} else {
		s.tail = s.tail[:0]
	}
	for i, e := range ents {
		s.tail = append(s.tail, tailEntry{e: e, size: uint64(sizes[i])})
	}
	if n := len(s.tail); n > maxTail {
		s.tail = append(s.tail[:0], s.tail[n-maxTail/2:]...)
	}
}

// fromTail returns the entries [lo, hi) up to maxSize (at least one) if
// the tail holds them all. Under s.mu.
func (s *LogStore) fromTail(lo, hi, maxSize uint64) ([]*pb.Entry, bool) {
	if len(s.tail) == 0 || lo < s.tail[0].e.GetIndex() || hi > s.tail[len(s.tail)-1].e.GetIndex()+1 {
		return nil, false
	}
	base := s.tail[0].e.GetIndex()
	var out []*pb.Entry
	var size uint64
	for _, t := range s.tail[lo-base : hi-base] {
		size += t.size
		if len(out) > 0 && size > maxSize {
			break
		}
		out = append(out, t.e)
	}
	return out, true
}

// SetConfState records, synced, the configuration a configuration change
// applied at index produced. A restarted member's Raft starts from it
// (InitialState) when it is newer than the snapshot's: the change's entry
// is at or below the applied index the state machine reports, so Raft
// would not apply it again, and a group bootstrapped from configuration
// entries has no snapshot holding them ("Configuration survives
// restarts").
func (s *LogStore) SetConfState(index uint64, cs *pb.ConfState) error {
	v, err := proto.Marshal(cs)
	if err != nil {
		return err
	}
	if err := s.db.Set(keyConfState, append(binary.BigEndian.AppendUint64(nil, index), v...), pebble.Sync); err != nil {
		return err
	}
	s.mu.Lock()
	s.conf, s.confIndex = proto.Clone(cs).(*pb.ConfState), index
	s.mu.Unlock()
	return nil
}

// Bootstrap writes the initial state of a new group into an empty store:
// a snapshot at index 1, term 1, whose configuration has the given voters.
// Every member of a new group is bootstrapped with the same voters, so all
// start from the same (empty) log, as raft.RawNode.Bootstrap recommends.
// A store that already holds state is left alone.
func (s *LogStore) Bootstrap(voters []uint64) error {
	s.mu.Lock()
	empty := s.snap.GetMetadata().GetIndex() == 0 && s.last == 0 && raft.IsEmptyHardState(s.hs)
	s.mu.Unlock()
	if !empty {
		return nil
	}
	snap := &pb.Snapshot{Metadata: &pb.SnapshotMetadata{
		Index:     proto.Uint64(1),
		Term:      proto.Uint64(1),
		ConfState: &pb.ConfState{Voters: append([]uint64(nil), voters...)},
	}}
	return s.Save(&pb.HardState{Term: proto.Uint64(1), Commit: proto.Uint64(1)}, nil, snap, true)
}

// keepsVote reports whether hs (a Ready's, nil for none) leaves the stored
// term and vote as they are.
func (s *LogStore) keepsVote(hs *pb.HardState) bool {
	if hs == nil || raft.IsEmptyHardState(hs) {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return hs.GetTerm() == s.hs.GetTerm() && hs.GetVote() == s.hs.GetVote()
}

// term is the term of the stored hard state.
func (s *LogStore) term() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hs.GetTerm()
}

// empty reports whether the store holds no state at all.
func (s *LogStore) empty() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snap.GetMetadata().GetIndex() == 0 && s.last == 0 && raft.IsEmptyHardState(s.hs)
}

// OpenLogStore opens (or creates) the Raft log under dir of fs (nil: the
// operating system's file system).
func OpenLogStore(dir string, fs vfs.FS) (*LogStore, error) {
	if fs == nil {
		fs = vfs.Default
	}
	db, err := pebble.Open(dir, &pebble.Options{FS: fs, Logger: quietPebbleLogger{}})
	if err != nil {
		return nil, fmt.Errorf("repl: open raft log: %w", err)
	}
	s := &LogStore{db: db, hs: &pb.HardState{}, snap: &pb.Snapshot{Metadata: &pb.SnapshotMetadata{ConfState: &pb.ConfState{}}}}
	if err := s.load(fs, fs.PathJoin(dir, segEntriesDir)); err != nil {
		if s.seg != nil {
			s.seg.close()
		}
		db.Close()
		return nil, err
	}
	return s, nil
}

func (s *LogStore) load(fs vfs.FS, segDir string) error {
	if v, ok, err := s.get(keyHardState); err != nil {
		return err
	} else if ok {
		if err := proto.Unmarshal(v, s.hs); err != nil {
			return fmt.Errorf("repl: raft log hard state: %w", err)
		}
	}
	if v, ok, err := s.get(keySnapshot); err != nil {
		return err
	} else if ok {
		snap := &pb.Snapshot{}
		if err := proto.Unmarshal(v, snap); err != nil {
			return fmt.Errorf("repl: raft log snapshot: %w", err)
		}
		s.snap = snap
	}
	if v, ok, err := s.get(keyConfState); err != nil {
		return err
	} else if ok {
		cs := &pb.ConfState{}
		if len(v) < 8 || proto.Unmarshal(v[8:], cs) != nil {
			return fmt.Errorf("repl: raft log configuration record is damaged")
		}
		s.conf, s.confIndex = cs, binary.BigEndian.Uint64(v)
	}
	s.first = s.snap.GetMetadata().GetIndex() + 1
	s.prevTerm = s.snap.GetMetadata().GetTerm()
	if v, ok, err := s.get(keyTruncated); err != nil {
		return err
	} else if ok {
		if len(v) != 16 {
			return fmt.Errorf("repl: raft log truncation record is damaged")
		}
		if ti := binary.BigEndian.Uint64(v); ti < s.first-1 {
			s.first, s.prevTerm = ti+1, binary.BigEndian.Uint64(v[8:])
		}
	}
	var valid uint64
	if v, ok, err := s.get(keyValidSeg); err != nil {
		return err
	} else if ok {
		if len(v) != 8 {
			return fmt.Errorf("repl: raft log segment record is damaged")
		}
		valid = binary.BigEndian.Uint64(v)
	}
	old, err := s.hasPebbleEntries()
	if err != nil {
		return err
	}
	if old {
		// A log of an earlier version: its entries move to a segment.
		if err := fs.RemoveAll(segDir); err != nil {
			return err
		}
	}
	if s.seg, err = openSegLog(fs, segDir, valid, s.first); err != nil {
		return err
	}
	s.last = s.seg.last()
	if old {
		if err := s.migratePebbleEntries(); err != nil {
			return fmt.Errorf("repl: raft log of an earlier version: moving its entries to segments: %w", err)
		}
	}
	if invariantsEnabled {
		s.checkContiguous()
	}
	return nil
}

func (s *LogStore) get(k []byte) ([]byte, bool, error) {
	v, c, err := s.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := append([]byte(nil), v...)
	c.Close()
	return out, true, nil
}

// Close closes the segments and the Pebble instance.
func (s *LogStore) Close() error {
	err := s.seg.close()
	if e := s.db.Close(); err == nil {
		err = e
	}
	return err
}

// hasPebbleEntries reports whether the Pebble instance holds entries (a
// log written by a version before the segments).
func (s *LogStore) hasPebbleEntries() (bool, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{keyEntryPre}, UpperBound: []byte{keyEntryPre + 1}})
	if err != nil {
		return false, err
	}
	defer it.Close()
	return it.First(), it.Error()
}

// migratePebbleEntries moves the entries of a log written by an earlier
// version (each under "e"+index in the Pebble instance) into a segment:
// those from first on are written and synced, then the Pebble keys are
// deleted, synced. The segments were emptied before (load): a member
// stopped between the two steps migrates again from the Pebble keys.
func (s *LogStore) migratePebbleEntries() error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: entryKey(s.first), UpperBound: []byte{keyEntryPre + 1}})
	if err != nil {
		return err
	}
	var ents []*pb.Entry
	for ok := it.First(); ok; ok = it.Next() {
		e := &pb.Entry{}
		if err := proto.Unmarshal(it.Value(), e); err != nil {
			it.Close()
			return err
		}
		ents = append(ents, e)
	}
	if err := it.Close(); err != nil {
		return err
	}
	if len(ents) > 0 {
		if ents[0].GetIndex() != s.first {
			return fmt.Errorf("the log starts at %d, its first entry is %d", s.first, ents[0].GetIndex())
		}
		if err := s.Save(nil, ents, nil, true); err != nil {
			return err
		}
	}
	if err := s.db.DeleteRange([]byte{keyEntryPre}, []byte{keyEntryPre + 1}, pebble.Sync); err != nil {
		return err
	}
	slog.Info("repl: raft log entries moved from Pebble to segments", "entries", len(ents))
	return nil
}

// Save writes one or more appends' state: the snapshot (which replaces
// the whole log), the hard state when its term or vote changed or with a
// snapshot ("Commit index not stored": a change of the commit index alone
// is kept in memory only), then the entries (which replace any
// conflicting tail). The snapshot and hard state go to the Pebble
// instance in one batch, synced, before the entries go to their segment,
// fdatasynced by the caller's goroutine itself ("Entries in segments":
// a crash between the two leaves the state the Pebble batch describes,
// with the log as it was). With sync the entries are synced before Save
// returns ("Log durable before use"); the in-memory bounds change after.
// It holds no lock readers take while it writes, so Raft reads the log
// while the node's appender syncs ("Log written off the loop").
func (s *LogStore) Save(hs *pb.HardState, ents []*pb.Entry, snap *pb.Snapshot, sync bool) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	first, last, stored := s.first, s.last, s.hs
	s.mu.Unlock()
	newSnap := snap != nil && !raft.IsEmptySnap(snap)
	if newSnap {
		first = snap.GetMetadata().GetIndex() + 1
		last = first - 1
	}
	if len(ents) > 0 {
		lo := ents[0].GetIndex()
		if lo < first {
			return fmt.Errorf("repl: append at %d below the log's first index %d", lo, first)
		}
		if lo > last+1 {
			return fmt.Errorf("repl: append at %d leaves a gap after %d", lo, last)
		}
	}
	hasHS := hs != nil && !raft.IsEmptyHardState(hs)
	writeHS := hasHS && (newSnap || hs.GetTerm() != stored.GetTerm() || hs.GetVote() != stored.GetVote())
	if newSnap || writeHS {
		b := s.db.NewBatch()
		defer b.Close()
		if newSnap {
			v, err := proto.Marshal(snap)
			if err != nil {
				return err
			}
			if err := b.Set(keySnapshot, v, nil); err != nil {
				return err
			}
			if err := b.Delete(keyTruncated, nil); err != nil {
				return err
			}
			// The segments written so far no longer belong to the log.
			if err := b.Set(keyValidSeg, binary.BigEndian.AppendUint64(nil, s.seg.nextSeq), nil); err != nil {
				return err
			}
		}
		if writeHS {
			// "Commit index not stored": only a new term, vote or
			// snapshot writes the hard state, with the commit index of
			// the moment — lowered to the last index durable before this
			// Save's entries (a crash before they are written must not
			// leave a commit index past the log's end, which Raft refuses
			// at start; the commit index is volatile state anyway).
			durable := last
			if len(ents) > 0 {
				durable = min(durable, ents[0].GetIndex()-1)
			}
			h := hs
			if hs.GetCommit() > durable {
				h = cloneHardState(hs)
				*h.Commit = max(durable, snap.GetMetadata().GetIndex())
			}
			v, err := proto.Marshal(h)
			if err != nil {
				return err
			}
			if err := b.Set(keyHardState, v, nil); err != nil {
				return err
			}
		}
		opt := pebble.NoSync
		if sync || newSnap {
			opt = pebble.Sync
		}
		if err := b.Commit(opt); err != nil {
			return fmt.Errorf("repl: write raft log: %w", err)
		}
		if newSnap {
			s.mu.Lock()
			s.snap, s.prevTerm = snap, snap.GetMetadata().GetTerm()
			s.first, s.last = first, last
			s.keepTail(nil, nil, true)
			err := s.seg.reset(first)
			s.mu.Unlock()
			if err != nil {
				return fmt.Errorf("repl: raft log: removing the segments a snapshot replaced: %w", err)
			}
		}
	}
	var sizes []int
	var locs []segLoc
	var newSeg *segment
	if len(ents) > 0 {
		var err error
		sizes, locs, newSeg, err = s.seg.write(ents, s.sizes[:0], s.locScratch[:0], sync)
		if err != nil {
			return fmt.Errorf("repl: write raft log: %w", err)
		}
		s.sizes, s.locScratch = sizes, locs
		last = ents[len(ents)-1].GetIndex()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(ents) > 0 {
		s.seg.commit(ents[0].GetIndex(), locs, newSeg)
	}
	if hasHS {
		s.hs = cloneHardState(hs)
	}
	s.first, s.last = first, last
	s.keepTail(ents, sizes, false)
	if invariantsEnabled {
		s.checkBounds()
	}
	return nil
}

// Compact records a snapshot of the state machine at index (taken by the
// caller at that applied index) and deletes the log up to and including
// index-keep, keeping the keep entries behind the snapshot so that a
// member a little behind catches up from them rather than from the
// snapshot ("Truncate only below a snapshot").
func (s *LogStore) Compact(index uint64, cs *pb.ConfState, data []byte, keep uint64) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	old := index <= s.snap.GetMetadata().GetIndex()
	s.mu.Unlock()
	if old {
		return raft.ErrSnapOutOfDate
	}
	term, err := s.Term(index)
	if err != nil {
		return err
	}
	trunc := index - min(keep, index)
	var truncTerm uint64
	if trunc > 0 {
		if truncTerm, err = s.Term(trunc); errors.Is(err, raft.ErrCompacted) {
			trunc = 0 // the log starts above it already
		} else if err != nil {
			return err
		}
	}
	// Under wmu the bounds change only here: read them, write unlocked.
	s.mu.Lock()
	snapIndex, first, prevTerm, last := s.snap.GetMetadata().GetIndex(), s.first, s.prevTerm, s.last
	s.mu.Unlock()
	if index <= snapIndex {
		return raft.ErrSnapOutOfDate
	}
	if index > last {
		return fmt.Errorf("repl: compact to %d beyond the last index %d", index, last)
	}
	snap := &pb.Snapshot{Data: data, Metadata: &pb.SnapshotMetadata{
		Index: proto.Uint64(index), Term: proto.Uint64(term), ConfState: proto.Clone(cs).(*pb.ConfState),
	}}
	v, err := proto.Marshal(snap)
	if err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.Set(keySnapshot, v, nil); err != nil {
		return err
	}
	if trunc >= first {
		first, prevTerm = trunc+1, truncTerm
	}
	rec := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, first-1), prevTerm)
	if err := b.Set(keyTruncated, rec, nil); err != nil {
		return err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return err
	}
	// The truncation record is durable: the segments that hold only
	// entries below first go (a crash before leaves them to the next
	// open, which reads past their entries and removes them).
	s.mu.Lock()
	s.snap, s.first, s.prevTerm = snap, first, prevTerm
	err = s.seg.compact(first)
	s.mu.Unlock()
	return err
}

// InitialState implements raft.Storage.
func (s *LogStore) InitialState() (*pb.HardState, *pb.ConfState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := s.snap.GetMetadata().GetConfState()
	if s.conf != nil && s.confIndex > s.snap.GetMetadata().GetIndex() {
		cs = s.conf
	}
	return proto.Clone(s.hs).(*pb.HardState), proto.Clone(pb.EnsureConfState(cs)).(*pb.ConfState), nil
}

// Entries implements raft.Storage.
func (s *LogStore) Entries(lo, hi, maxSize uint64) ([]*pb.Entry, error) {
	s.mu.Lock()
	first, last := s.first, s.last
	if lo >= first && hi <= last+1 {
		if out, ok := s.fromTail(lo, hi, maxSize); ok {
			s.mu.Unlock()
			return out, nil
		}
	}
	s.mu.Unlock()
	if lo < first {
		return nil, raft.ErrCompacted
	}
	if hi > last+1 {
		return nil, raft.ErrUnavailable
	}
	return s.readEntries(lo, hi, maxSize)
}

// readEntries reads the entries [lo, hi) up to maxSize (at least one)
// from their segments.
func (s *LogStore) readEntries(lo, hi, maxSize uint64) ([]*pb.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lo < s.first || lo < s.seg.first {
		return nil, raft.ErrCompacted // compacted meanwhile
	}
	if hi > s.last+1 {
		return nil, raft.ErrUnavailable
	}
	var out []*pb.Entry
	var size uint64
	for i := lo; i < hi; i++ {
		e, err := s.seg.entry(i)
		if err != nil {
			return nil, err
		}
		size += uint64(proto.Size(e))
		if len(out) > 0 && size > maxSize {
			break
		}
		out = append(out, e)
	}
	return out, nil
}

// Term implements raft.Storage.
func (s *LogStore) Term(i uint64) (uint64, error) {
	s.mu.Lock()
	first, last, prevTerm := s.first, s.last, s.prevTerm
	if i >= first && i <= last {
		if t, ok := s.fromTail(i, i+1, 0); ok {
			s.mu.Unlock()
			return t[0].GetTerm(), nil
		}
	}
	s.mu.Unlock()
	switch {
	case i == first-1:
		return prevTerm, nil
	case i < first:
		return 0, raft.ErrCompacted
	case i > last:
		return 0, raft.ErrUnavailable
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < s.first || i < s.seg.first {
		return 0, raft.ErrCompacted // compacted meanwhile
	}
	if i > s.last {
		return 0, raft.ErrUnavailable
	}
	return s.seg.locs[i-s.seg.first].term, nil
}

// LastIndex implements raft.Storage.
func (s *LogStore) LastIndex() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last, nil
}

// FirstIndex implements raft.Storage.
func (s *LogStore) FirstIndex() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first, nil
}

// Snapshot implements raft.Storage.
func (s *LogStore) Snapshot() (*pb.Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snap, nil
}

// checkBounds is the cheap part of "Contiguous log", run after every save
// under the invariants tag: the segments hold exactly [first, last], and
// the entries at first and last read back with their indexes.
func (s *LogStore) checkBounds() {
	if s.seg.first > s.first || s.seg.last() != s.last {
		invariantFail("Contiguous log", "segments hold [%d, %d], the log is [%d, %d]", s.seg.first, s.seg.last(), s.first, s.last)
	}
	if s.last >= s.first {
		for _, i := range []uint64{s.first, s.last} {
			if _, err := s.seg.entry(i); err != nil {
				invariantFail("Contiguous log", "entry %d: %v", i, err)
			}
		}
	}
	// "Commit index not stored": what a restart reads has the term and
	// vote of memory, and a commit index not above it.
	if v, ok, err := s.get(keyHardState); err == nil && !raft.IsEmptyHardState(s.hs) {
		stored := &pb.HardState{}
		if !ok || proto.Unmarshal(v, stored) != nil || stored.GetTerm() != s.hs.GetTerm() || stored.GetVote() != s.hs.GetVote() || stored.GetCommit() > s.hs.GetCommit() {
			invariantFail("Commit index not stored", "stored hard state %v, in memory %v", stored, s.hs)
		}
	}
	for i, t := range s.tail {
		if t.e.GetIndex() != s.last-uint64(len(s.tail)-1-i) {
			invariantFail("Recent entries in memory", "tail entry %d of %d has index %d; the log ends at %d", i, len(s.tail), t.e.GetIndex(), s.last)
		}
		if t.e.GetIndex() >= s.seg.first && t.e.GetTerm() != s.seg.locs[t.e.GetIndex()-s.seg.first].term {
			invariantFail("Recent entries in memory", "tail entry %d has term %d, its record %d", t.e.GetIndex(), t.e.GetTerm(), s.seg.locs[t.e.GetIndex()-s.seg.first].term)
		}
	}
}

// checkContiguous checks "Contiguous log" in full: every index in
// [first, last] reads back from its segment with that index, and no
// entry is left in the Pebble instance.
func (s *LogStore) checkContiguous() {
	for i := max(s.first, s.seg.first); i <= s.last; i++ {
		if _, err := s.seg.entry(i); err != nil {
			invariantFail("Contiguous log", "entry %d (first %d, last %d): %v", i, s.first, s.last, err)
		}
	}
	if s.seg.last() != s.last {
		invariantFail("Contiguous log", "segments end at %d, last index is %d", s.seg.last(), s.last)
	}
	if old, err := s.hasPebbleEntries(); err == nil && old {
		invariantFail("Contiguous log", "entries left in the Pebble instance")
	}
}

// quietPebbleLogger keeps Pebble's informational lines out of test output.
type quietPebbleLogger struct{}

func (quietPebbleLogger) Infof(string, ...any) {}
func (quietPebbleLogger) Errorf(f string, args ...any) {
	slog.Error("repl: raft log: " + fmt.Sprintf(f, args...))
}
func (quietPebbleLogger) Fatalf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }
