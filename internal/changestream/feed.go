package changestream

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/hlc"
)

// Feed is the newest part of the oplog, read once for all the streams of
// a node: every commit group wakes each open stream's awaiting getMore,
// and without it each would open its own iterator on the same few entries
// and build the same events again (ten streams: ten reads and ten
// decodings per group). A stream opened through a Feed that has reached
// the newest entries reads them from the Feed, and takes the events
// another stream of the same shape already built. On a replica set member
// the log hands the Feed each group's entries as it applies the group
// (tapLog), so the window grows without reading the log back; otherwise,
// or when a handed group does not follow on from the window (one was
// dropped), the first reader after a commit fills the window from the log
// while the others wait for it (one tail reader). A stream behind the
// Feed's window reads the log itself, as one opened without a Feed does.
//
// The Feed holds at most feedEntries entries and feedBytes of them and of
// their events, and tapBytes of handed groups not yet taken into the
// window, whatever the number of streams and however slow their
// consumers: the window slides on as the log grows ("Reads the log, never
// buffers it" still holds, with one bounded window per node).
type Feed struct {
	log Log
	mu  sync.Mutex
	// entries are every entry with a ts in (base, top], oldest first; top
	// is also where the last fill found the end of the log (a high water
	// mark: nothing at or below it is left to read).
	base, top hlc.Timestamp
	entries   []*fedEntry
	bytes     int
	started   bool
	// fills counts the reads of the log (tests: the tap spares them).
	fills int
	// tapped holds the groups a tapLog handed over (tapped) since the last
	// read took them (drain), at most tapBytes of entries; inMu guards it
	// and is held only to append or take, never while reading the log, so
	// the applying goroutine does not wait for readers. lastRead is when
	// a stream last read (unix nanoseconds): a Feed no stream reads copies
	// nothing.
	inMu     sync.Mutex
	tapped   []tapGroup
	inBytes  int
	lastRead atomic.Int64
}

// tapGroup is one group's entries as a tapLog handed them over: every
// entry with a ts in (prev, now].
type tapGroup struct {
	prev, now hlc.Timestamp
	entries   []fedEntry
}

// tapLog is a Log that hands each group's new entries to a Feed as the
// group is applied (an engine on a replica set member, engine.TapOplog),
// so the streams at the log's end take them without the Feed reading the
// log back (an iterator per fill, under the Feed's lock, while every
// other stream waits).
type tapLog interface {
	tapOplog(fn func(prev, now hlc.Timestamp, entries func(func(hlc.Timestamp, bsoncore.Document))))
}

// Bounds of a Feed's window and of one fill; of the groups tapped and not
// yet drained (past it they are dropped: the next read fills from the
// log); and how long after the last read the tap still copies groups.
var (
	feedEntries = 4096
	feedBytes   = 8 << 20
	tapBytes    = 1 << 20
	tapIdle     = time.Second
)

// fedEntry is one entry in the window, with the events streams of each
// shape built from it.
type fedEntry struct {
	ts    hlc.Timestamp
	raw   bsoncore.Document
	views []view
}

// view is the events one shape of stream shows for an entry.
type view struct {
	shape  shape
	events []event
}

// shape is what decides the events a stream builds from an entry, beside
// the entry: streams of one shape show the same events.
type shape struct {
	scope                      Scope
	fullDocument, beforeChange string
	expanded                   bool
	keep                       OpTypes
	head                       string // the head filter's document (Prefilter)
}

// NewFeed returns a Feed over log, tapping it when it hands over its new
// entries as they are applied (tapLog).
func NewFeed(log Log) *Feed {
	f := &Feed{log: log}
	if t, ok := log.(tapLog); ok {
		t.tapOplog(f.tap)
	}
	return f
}

// tap takes a group's entries from the tapLog, on the applying goroutine:
// a copy, appended to tapped for the next read, unless no stream read
// lately (the first read after a quiet spell fills from the log).
func (f *Feed) tap(prev, now hlc.Timestamp, entries func(func(hlc.Timestamp, bsoncore.Document))) {
	if time.Now().UnixNano()-f.lastRead.Load() > int64(tapIdle) {
		return
	}
	n, size, last, ordered := 0, 0, prev, true
	entries(func(ts hlc.Timestamp, raw bsoncore.Document) {
		n, size = n+1, size+len(raw)
		ordered = ordered && ts > last && ts <= now
		last = ts
	})
	if !ordered {
		return // not (prev, now] in order: not linked, the next read fills
	}
	g := tapGroup{prev: prev, now: now, entries: make([]fedEntry, 0, n)}
	buf := make([]byte, 0, size) // one allocation for the group's entries
	entries(func(ts hlc.Timestamp, raw bsoncore.Document) {
		buf = append(buf, raw...)
		g.entries = append(g.entries, fedEntry{ts: ts, raw: buf[len(buf)-len(raw) : len(buf) : len(buf)]})
	})
	f.inMu.Lock()
	if f.inBytes+size > tapBytes {
		// Nobody drained for a while: drop what waits (its next read
		// fills from the log, as prev then runs ahead of its top).
		clear(f.tapped)
		f.tapped, f.inBytes = f.tapped[:0], 0
	}
	f.tapped = append(f.tapped, g)
	f.inBytes += size
	f.inMu.Unlock()
}

// drain moves the tapped groups into the window while they follow on
// from its top (a group's prev at or below top: it holds every entry from
// prev to now), the entries above top only; at the first that does not
// (one dropped or not tapped came before it) it drops the rest, and the
// read fills from the log instead.
func (f *Feed) drain() {
	f.inMu.Lock()
	in := f.tapped
	f.tapped, f.inBytes = nil, 0
	f.inMu.Unlock()
	for i := range in {
		g := &in[i]
		if g.now <= f.top {
			continue // read from the log already
		}
		if g.prev > f.top {
			return
		}
		for j := range g.entries {
			if fe := &g.entries[j]; fe.ts > f.top {
				f.entries = append(f.entries, fe)
				f.bytes += len(fe.raw)
			}
		}
		f.top = g.now
	}
}

// Open opens a stream as Open does, reading through the Feed once it
// reaches the Feed's window. Streams whose events are not the same for
// every reader (fullDocument: updateLookup reads the document when the
// event is read) read the log themselves.
func (f *Feed) Open(ctx context.Context, scope Scope, spec Spec) (*Stream, error) {
	s, err := Open(ctx, f.log, scope, spec)
	if err != nil {
		return nil, err
	}
	if spec.FullDocument != "updateLookup" {
		s.feed = f
		s.shape = shape{scope: scope, fullDocument: spec.FullDocument, beforeChange: spec.FullDocumentBeforeChange, expanded: spec.ShowExpandedEvents}
	}
	return s, nil
}

// read is Stream.read through the Feed: ok false when the stream is
// behind the window (it reads the log itself). Only a stream past its
// resume point reads here (every event it reads is one it returns).
func (f *Feed) read(s *Stream) (caughtUp, ok bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.evict() // after the read: evicting moves the entries it indexes
	f.lastRead.Store(time.Now().UnixNano())
	if !f.started {
		f.base, f.top, f.started = s.from, s.from, true
	} else {
		f.drain()
	}
	if s.from < f.base {
		return false, false, nil
	}
	if s.from > f.top || f.top < f.log.LastCommitted() {
		// Something committed past top (the tap did not hand it over):
		// a stream must not call itself caught up before what committed
		// when it began to read (its getMore waits for the next commit
		// after that). At top, with nothing committed past it, the stream
		// is caught up without reading the log.
		reached, err := f.fill()
		if err != nil {
			return false, true, err
		}
		if !reached && s.from > f.top {
			// The window is far behind (no stream read it for a while):
			// start it again where this stream is.
			f.reset(s.from)
			if _, err := f.fill(); err != nil {
				return false, true, err
			}
		}
		if s.from > f.top || s.from < f.base {
			// Past what one fill reads, or behind what the fill left.
			return false, false, nil
		}
	}
	// The first entry after s.from: the window is in ts order.
	lo, hi := 0, len(f.entries)
	for lo < hi {
		if m := (lo + hi) / 2; f.entries[m].ts > s.from {
			hi = m
		} else {
			lo = m + 1
		}
	}
	size := 0
	s.queue = s.queue[:0]
	for i := lo; i < len(f.entries) && len(s.queue) < readEvents && size < readBytes; i++ {
		fe := f.entries[i]
		evs, err := f.events(s, fe)
		if err != nil {
			return false, true, err
		}
		s.queue = append(s.queue, evs...)
		for _, ev := range evs {
			size += len(ev.doc)
		}
		s.from = fe.ts
	}
	if s.from < f.top && (len(f.entries) == 0 || s.from >= f.entries[len(f.entries)-1].ts) {
		// Every entry up to top was read: top is a high water mark.
		s.from = f.top
	}
	if s.from == f.top {
		s.horizon = max(s.horizon, f.top)
		return true, true, nil
	}
	return false, true, nil
}

// events are the events s shows for fe, built once per shape.
func (f *Feed) events(s *Stream, fe *fedEntry) ([]event, error) {
	for _, v := range fe.views {
		if v.shape == s.shape {
			return v.events, nil
		}
	}
	evs, err := s.entryEvents(nil, fe.ts, fe.raw)
	if err != nil {
		return nil, err
	}
	fe.views = append(fe.views, view{shape: s.shape, events: evs})
	for _, ev := range evs {
		f.bytes += len(ev.doc) + len(ev.token)
	}
	return evs, nil
}

// fill reads the log after top into the window, at most readEntries
// entries or readBytes of them; top becomes the read's horizon when it
// reached the log's end (reached).
func (f *Feed) fill() (reached bool, err error) {
	f.fills++
	n, size := 0, 0
	last := f.top
	reached = true
	horizon, err := f.log.ReadOplog(f.top, func(ts hlc.Timestamp, raw bsoncore.Document) bool {
		f.entries = append(f.entries, &fedEntry{ts: ts, raw: append(bsoncore.Document(nil), raw...)})
		f.bytes += len(raw)
		size += len(raw)
		last = ts
		n++
		reached = n < readEntries && size < readBytes
		return reached
	})
	if err != nil {
		return false, err
	}
	f.top = last
	if reached {
		f.top = max(horizon, last)
	}
	f.evict()
	return reached, nil
}

// reset empties the window and starts it at ts.
func (f *Feed) reset(ts hlc.Timestamp) {
	clear(f.entries)
	f.entries, f.bytes, f.base, f.top = f.entries[:0], 0, ts, ts
}

// evict drops the oldest entries once the window is past its bounds, down
// to seven eighths of them (so the entries left are moved down once per
// eighth of the window, not at every fill); base follows.
func (f *Feed) evict() {
	if len(f.entries) <= feedEntries && f.bytes <= feedBytes {
		return
	}
	k := 0
	for k < len(f.entries)-1 && (len(f.entries)-k > feedEntries-feedEntries/8 || f.bytes > feedBytes-feedBytes/8) {
		fe := f.entries[k]
		f.bytes -= len(fe.raw)
		for _, v := range fe.views {
			for _, ev := range v.events {
				f.bytes -= len(ev.doc) + len(ev.token)
			}
		}
		f.base = fe.ts
		f.entries[k] = nil
		k++
	}
	if k > 0 {
		f.entries = append(f.entries[:0], f.entries[k:]...)
	}
}
