package repl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// The Raft log's entries live in segment files (segLog), written and
// synced by the node's appender itself ("Entries in segments", doc.go).
//
// A segment is named by its sequence number (segment-%016x.seg, in the
// entries directory under the log's directory; not ".log", which
// storage's LogAheadFS takes for a Pebble write-ahead log and wraps) and holds records, each
// a 24-byte header — the payload's length (4 bytes), a CRC-32C of the
// rest of the header and the payload (4), the entry's index (8) and
// term (8), little-endian — then the marshalled pb.Entry. A length of
// zero ends the segment (zeros written ahead of the writer, or never
// written); so does a record whose checksum fails or that runs past the
// file's end (a torn tail: bytes written but not synced when the member
// stopped). Segments are read in sequence order; a record whose index is
// at or below the last read replaces the entries from that index on (a
// new leader's entries replacing a conflicting tail are appended, never
// written over the old ones). Every open writes into a new segment, so
// no record is ever written after a torn tail.

// segHeaderLen is the length of a record's header.
const segHeaderLen = 24

// defaultSegBytes is the size past which appends go to a new segment
// (segLog.segBytes; tests make it small).
const defaultSegBytes = 8 << 20

// segAheadBytes is how far ahead of the writer zeros are written on an
// operating system's file while appends are small, so that an fdatasync
// writes the records alone rather than also the file's new size (as
// storage's "Log syncs overwrite" does for Pebble's write-ahead logs).
const (
	segAheadBytes   = 1 << 20
	segAheadMaxSave = 64 << 10
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// segZeros is what is written ahead of the writer: read only, shared.
var segZeros [segAheadBytes]byte

// segEntriesDir is the directory of the segments under the log's own.
const segEntriesDir = "entries"

// segment is one file of a segLog.
type segment struct {
	seq  uint64
	name string
	r    vfs.File // for reads, and for writes when it is the one appended to
	w    bool     // appends go here
	size int64    // bytes of records written (the next record's offset)
	// ahead is how far the file holds bytes (records, then zeros).
	ahead int64
}

// segLoc is where one entry's record is.
type segLoc struct {
	seg  *segment
	off  int64 // the payload's offset
	n    uint32
	term uint64
}

// segLog is the entries of a LogStore. Its fields are guarded by the
// LogStore's locks: locs and segs change under both wmu and mu (readers
// hold mu); cur's file is written under wmu alone.
type segLog struct {
	fs       vfs.FS
	dir      string
	segBytes int64
	segs     []*segment // oldest first
	cur      *segment   // appends go here; nil: the next append opens a new segment
	nextSeq  uint64
	// first is the index of locs[0]; locs holds every entry [first,
	// first+len(locs)-1] ("Contiguous log").
	first uint64
	locs  []segLoc
	// ahead turns the zeros written ahead on (files with a descriptor:
	// an operating system's; tests turn it on in memory).
	ahead      bool
	forceAhead bool
	buf        []byte // Save's encoding scratch
	written    int64  // bytes written to segments, zeros ahead included
	rbuf       []byte // reads' scratch (under mu)
}

func segName(seq uint64) string { return fmt.Sprintf("segment-%016x.seg", seq) }

func parseSegName(name string) (uint64, bool) {
	s, ok := strings.CutPrefix(name, "segment-")
	if !ok {
		return 0, false
	}
	if s, ok = strings.CutSuffix(s, ".seg"); !ok || len(s) != 16 {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 16, 64)
	return v, err == nil
}

// openSegLog reads every segment of dir at or above sequence valid
// (removing those below: a snapshot replaced them), keeping the entries
// from first on (those below were compacted). It returns the log and its
// last index (first-1 when empty).
func openSegLog(fs vfs.FS, dir string, valid, first uint64) (*segLog, error) {
	if _, err := fs.Stat(dir); err != nil {
		// A new directory: its name is durable before any segment in it.
		if err := fs.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		if err := SyncDir(fs, fs.PathDir(dir)); err != nil {
			return nil, err
		}
	}
	names, err := fs.List(dir)
	if err != nil {
		return nil, err
	}
	var seqs []uint64
	for _, n := range names {
		if seq, ok := parseSegName(n); ok {
			seqs = append(seqs, seq)
		}
	}
	slices.Sort(seqs)
	l := &segLog{fs: fs, dir: dir, segBytes: defaultSegBytes, first: first, nextSeq: max(valid, 1)}
	removed := false
	for _, seq := range seqs {
		if seq >= l.nextSeq {
			l.nextSeq = seq + 1
		}
		if seq < valid {
			if err := fs.Remove(fs.PathJoin(dir, segName(seq))); err != nil {
				return nil, err
			}
			removed = true
			continue
		}
		if err := l.readSegment(seq); err != nil {
			l.close()
			return nil, err
		}
	}
	if removed {
		if err := l.syncDir(); err != nil {
			l.close()
			return nil, err
		}
	}
	l.dropUnused()
	return l, nil
}

// readSegment reads segment seq's records into locs.
func (l *segLog) readSegment(seq uint64) error {
	name := l.fs.PathJoin(l.dir, segName(seq))
	f, err := l.fs.Open(name)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	data := make([]byte, st.Size())
	if _, err := f.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		f.Close()
		return err
	}
	seg := &segment{seq: seq, name: name, r: f}
	l.segs = append(l.segs, seg)
	off := int64(0)
	for off+segHeaderLen <= int64(len(data)) {
		h := data[off : off+segHeaderLen]
		n := binary.LittleEndian.Uint32(h)
		if n == 0 || off+segHeaderLen+int64(n) > int64(len(data)) {
			break
		}
		p := data[off+segHeaderLen : off+segHeaderLen+int64(n)]
		if recordCRC(h, p) != binary.LittleEndian.Uint32(h[4:]) {
			break // a torn tail
		}
		index, term := binary.LittleEndian.Uint64(h[8:]), binary.LittleEndian.Uint64(h[16:])
		if err := l.place(index, segLoc{seg: seg, off: off + segHeaderLen, n: n, term: term}); err != nil {
			return fmt.Errorf("repl: raft log segment %s: %w", name, err)
		}
		off += segHeaderLen + int64(n)
	}
	seg.size, seg.ahead = off, off
	return nil
}

// place records that index is at loc, replacing any entry at or above it.
func (l *segLog) place(index uint64, loc segLoc) error {
	last := l.first + uint64(len(l.locs)) - 1
	switch {
	case index < l.first:
		return nil // compacted
	case index > last+1:
		return fmt.Errorf("entry %d follows entry %d: entries are missing", index, last)
	}
	l.locs = append(l.locs[:index-l.first], loc)
	return nil
}

// recordCRC is the checksum of a record: its length, index and term, then
// its payload.
func recordCRC(h, p []byte) uint32 {
	c := crc32.Update(0, crcTable, h[:4])
	c = crc32.Update(c, crcTable, h[8:segHeaderLen])
	return crc32.Update(c, crcTable, p)
}

// last is the last index held.
func (l *segLog) last() uint64 { return l.first + uint64(len(l.locs)) - 1 }

// pending is what write wrote, for commit.
type segPending struct {
	seg   *segment
	locs  []segLoc
	index uint64
}

// write encodes ents (each entry straight into the write buffer, once:
// "Entries encoded once into the batch") and writes them to the segment
// appended to, opening a new one first when there is none or it is full;
// with sync it then fdatasyncs it. sizes gets each entry's encoded size.
// It changes no field readers use (locs, segs are changed by commit),
// so it runs without the LogStore's mu.
func (l *segLog) write(ents []*pb.Entry, sizes []int, locs []segLoc, sync bool) ([]int, []segLoc, *segment, error) {
	var newSeg *segment
	if l.cur == nil || l.cur.size >= l.segBytes {
		if l.cur != nil {
			// Records of a later segment must not outlive unsynced ones
			// of this one (a gap would not open).
			if err := l.cur.r.SyncData(); err != nil {
				return sizes, locs, nil, err
			}
		}
		seg, err := l.create()
		if err != nil {
			return sizes, locs, nil, err
		}
		newSeg = seg
	}
	seg := l.cur
	if newSeg != nil {
		seg = newSeg
	}
	buf := l.buf[:0]
	for _, e := range ents {
		n := proto.Size(e)
		at := len(buf)
		buf = slices.Grow(buf, segHeaderLen+n)[:at+segHeaderLen]
		h := buf[at:]
		binary.LittleEndian.PutUint32(h, uint32(n))
		binary.LittleEndian.PutUint64(h[8:], e.GetIndex())
		binary.LittleEndian.PutUint64(h[16:], e.GetTerm())
		v, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(buf, e)
		if err != nil {
			return sizes, locs, nil, err
		}
		if len(v) != at+segHeaderLen+n || &v[0] != &buf[0] {
			return sizes, locs, nil, fmt.Errorf("repl: entry %d encoded in %d bytes, sized %d", e.GetIndex(), len(v)-at-segHeaderLen, n)
		}
		buf = v
		h = buf[at : at+segHeaderLen]
		p := buf[at+segHeaderLen:]
		binary.LittleEndian.PutUint32(h[4:], recordCRC(h, p))
		if invariantsEnabled {
			if back := new(pb.Entry); proto.Unmarshal(p, back) != nil || !proto.Equal(back, e) {
				invariantFail("Entries encoded once into the batch", "entry %d does not decode from the %d bytes encoded into its record", e.GetIndex(), n)
			}
		}
		sizes = append(sizes, n)
		locs = append(locs, segLoc{seg: seg, off: seg.size + int64(at) + segHeaderLen, n: uint32(n), term: e.GetTerm()})
	}
	l.buf = buf
	if (l.ahead || l.forceAhead) && len(buf) < segAheadMaxSave && seg.size+int64(len(buf)) > seg.ahead {
		// Zeros ahead: the records' fdatasync then writes no new size.
		if _, err := seg.r.WriteAt(segZeros[:], seg.ahead); err != nil {
			return sizes, locs, nil, err
		}
		seg.ahead += segAheadBytes
		l.written += segAheadBytes
	}
	if _, err := seg.r.WriteAt(buf, seg.size); err != nil {
		return sizes, locs, nil, err
	}
	l.written += int64(len(buf))
	if sync {
		if err := seg.r.SyncData(); err != nil {
			return sizes, locs, nil, err
		}
	}
	if newSeg != nil {
		l.segs = append(l.segs, newSeg) // commit makes it cur (under mu)
	}
	seg.size += int64(len(buf))
	seg.ahead = max(seg.ahead, seg.size)
	return sizes, locs, newSeg, nil
}

// create opens a new segment and makes its name durable.
func (l *segLog) create() (*segment, error) {
	seq := l.nextSeq
	name := l.fs.PathJoin(l.dir, segName(seq))
	f, err := l.fs.Create(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, err
	}
	if err := l.syncDir(); err != nil {
		f.Close()
		return nil, err
	}
	l.nextSeq++
	l.ahead = f.Fd() != vfs.InvalidFd
	return &segment{seq: seq, name: name, r: f, w: true}, nil
}

func (l *segLog) syncDir() error { return SyncDir(l.fs, l.dir) }

// commit makes what write wrote readable: the entries from index on are
// at locs (replacing any there). Under mu.
func (l *segLog) commit(index uint64, locs []segLoc, newSeg *segment) {
	if newSeg != nil {
		if l.cur != nil {
			l.cur.w = false
		}
		l.cur = newSeg
	}
	l.locs = append(l.locs[:index-l.first], locs...)
}

// compact drops the entries below first and removes the segments that
// hold none at or above it. Under mu.
func (l *segLog) compact(first uint64) error {
	if first <= l.first {
		return nil
	}
	if k := first - l.first; k >= uint64(len(l.locs)) {
		l.locs = l.locs[:0]
	} else if k > uint64(cap(l.locs))/2 {
		l.locs = append(make([]segLoc, 0, len(l.locs)-int(k)+1024), l.locs[k:]...)
	} else {
		l.locs = l.locs[k:]
	}
	l.first = first
	return l.dropUnused()
}

// dropUnused removes the segments before the one holding the first entry
// (every segment but the one appended to when the log is empty): the
// entries' segments never go back in sequence order as the index rises.
func (l *segLog) dropUnused() error {
	keep := l.nextSeq // remove segments below keep
	if len(l.locs) > 0 {
		keep = l.locs[0].seg.seq
	} else if l.cur != nil {
		keep = l.cur.seq
	}
	var err error
	i := 0
	for ; i < len(l.segs) && l.segs[i].seq < keep; i++ {
		s := l.segs[i]
		s.r.Close()
		if e := l.fs.Remove(s.name); e != nil && err == nil {
			err = e
		}
	}
	l.segs = append(l.segs[:0], l.segs[i:]...)
	return err
}

// reset empties the log, which starts again at first (a snapshot replaced
// it: the caller stored the sequence number valid from now on first).
// Under mu.
func (l *segLog) reset(first uint64) error {
	l.locs, l.first, l.cur = l.locs[:0], first, nil
	return l.dropUnused()
}

// entry reads entry i (in [first, last]). Under mu.
func (l *segLog) entry(i uint64) (*pb.Entry, error) {
	loc := l.locs[i-l.first]
	if cap(l.rbuf) < int(loc.n) {
		l.rbuf = make([]byte, loc.n)
	}
	b := l.rbuf[:loc.n]
	if _, err := loc.seg.r.ReadAt(b, loc.off); err != nil && !(errors.Is(err, io.EOF)) {
		return nil, err
	}
	e := &pb.Entry{}
	if err := proto.Unmarshal(b, e); err != nil {
		return nil, fmt.Errorf("repl: raft log entry %d: %w", i, err)
	}
	if e.GetIndex() != i {
		return nil, fmt.Errorf("repl: raft log entry %d read as %d", i, e.GetIndex())
	}
	return e, nil
}

func (l *segLog) close() error {
	var err error
	for _, s := range l.segs {
		if e := s.r.Close(); e != nil && err == nil {
			err = e
		}
	}
	l.segs, l.cur = nil, nil
	return err
}
