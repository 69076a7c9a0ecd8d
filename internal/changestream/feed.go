package changestream

import (
	"context"
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/hlc"
)

// Feed is the newest part of the oplog, read once for all the streams of
// a node: every commit group wakes each open stream's awaiting getMore,
// and without it each would open its own iterator on the same few entries
// and build the same events again (ten streams: ten reads and ten
// decodings per group). A stream opened through a Feed that has reached
// the newest entries reads them from the Feed, which the first reader
// after a commit fills from the log while the others wait for it (one
// tail reader), and takes the events another stream of the same shape
// already built. A stream behind the Feed's window reads the log itself,
// as one opened without a Feed does.
//
// The Feed holds at most feedEntries entries and feedBytes of them and of
// their events, whatever the number of streams and however slow their
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
}

// Bounds of a Feed's window and of one fill.
var (
	feedEntries = 4096
	feedBytes   = 8 << 20
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
}

// NewFeed returns a Feed over log.
func NewFeed(log Log) *Feed { return &Feed{log: log} }

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
	if !f.started {
		f.base, f.top, f.started = s.from, s.from, true
	}
	if s.from < f.base {
		return false, false, nil
	}
	if s.from >= f.top || f.top < f.log.LastCommitted() {
		// Something committed since the last fill: a stream must not
		// call itself caught up before what committed when it began to
		// read (its getMore waits for the next commit after that).
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

// evict drops the oldest entries beyond the window's bounds; base follows.
func (f *Feed) evict() {
	k := 0
	for k < len(f.entries)-1 && (len(f.entries)-k > feedEntries || f.bytes > feedBytes) {
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
