package changestream

import (
	"bytes"
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/opctx"
	"github.com/cairndb/cairn/internal/query"
)

// Log is what a stream reads: the change log, and documents for
// fullDocument's lookups. EngineLog serves it from an engine.
type Log interface {
	// ReadOplog is engine.ReadOplog: the entries after a ts, and the
	// read's horizon.
	ReadOplog(after hlc.Timestamp, fn func(ts hlc.Timestamp, entry bsoncore.Document) bool) (hlc.Timestamp, error)
	// OplogFirst is the oldest entry's ts (0: none); OplogTrimmed the
	// newest ts a trim removed since the process started (0: none).
	OplogFirst() (hlc.Timestamp, error)
	OplogTrimmed() hlc.Timestamp
	// LastCommitted is where a stream with no start point begins.
	LastCommitted() hlc.Timestamp
	// Lookup reads db.coll's document with _id id now (updateLookup).
	Lookup(db, coll string, id bsoncore.Value) (bsoncore.Document, bool, error)
	// PreImage is the document as it was before the operation at (ts,
	// idx) of the collection ui (changeStreamPreAndPostImages).
	PreImage(db, coll string, ui []byte, ts hlc.Timestamp, idx int32) (bsoncore.Document, bool, error)
}

// Bounds of one read of the log: it stops once it queued readEvents
// events or readBytes of them (then the queue is what the stream holds),
// or read readEntries entries (the next read goes on from there). Reading
// ahead a little saves an iterator per event; the bounds keep "Reads the
// log, never buffers it".
const (
	readEntries = 1024
	readEvents  = 128
	readBytes   = 1 << 20
)

// Stream is an open change stream: an agg.Source of its events. Next
// returns nil when the log holds nothing more for now (a later Next reads
// again). It holds at most a bounded read-ahead of events (readEvents,
// readBytes): it reads the log, it does not buffer it.
type Stream struct {
	ctx   context.Context
	log   Log
	spec  Spec
	scope Scope
	// from is the ts after which the next read starts; skip is the
	// position at or before which events are dropped (a resume point).
	from hlc.Timestamp
	skip position
	// queue holds the events read ahead, not yet returned.
	queue []event
	// last and prev are the tokens of the last two events returned, and
	// lastPos the position of the last.
	last, prev bsoncore.Document
	lastPos    position
	// start is the token of where the stream started (the given one, or a
	// high water mark), the resume token until an event is returned.
	start bsoncore.Document
	// horizon: every entry up to it was read and none is queued (a high
	// water mark for the resume token).
	horizon hlc.Timestamp
	ended   bool
	// feed, when set, is the node's Feed the stream reads through once past
	// its resume point, as a stream of shape.
	feed  *Feed
	shape shape
	// scratch and ksScratch are reused by each event the stream builds for
	// its token's eventIdentifier and keystring (event.go's builder).
	scratch, ksScratch []byte
	// counting: the stream counts what it reads in stats (explain's
	// executionStats; a stream reading through the Feed counts nothing).
	counting bool
	stats    ReadStats
	// begin is the first ts the stream reads (its start point).
	begin hlc.Timestamp
	// keep is the CRUD events the stream builds (KeepOnly; 0: all); the
	// others are queued as dropped (token, no doc).
	keep OpTypes
	// hwDoc is the high water mark token for cluster time hw, the last
	// ResumeToken built.
	hw    hlc.Timestamp
	hwDoc bsoncore.Document
	// head, when set, is the filter a CRUD event's head must match to be
	// built (Prefilter; the others are queued as dropped), headScratch the
	// buffer each head is built in.
	head        *query.Filter
	headScratch []byte
}

// ReadStats are what a counting stream read: the oplog entries, the
// operations in them (an applyOps entry's each), the events built from them
// (invalidates apart), and those past the resume point (returned).
type ReadStats struct {
	Entries, Operations, Events, Invalidates, Kept int64
}

// Counting makes the stream count what it reads (Stats): for explain, whose
// stream reads the log itself.
func (s *Stream) Counting() { s.counting, s.feed, s.keep, s.head = true, nil, 0, nil }

// Stats is what the stream read since Counting.
func (s *Stream) Stats() ReadStats { return s.stats }

// Begin is the first cluster time the stream reads: the resume token's,
// startAtOperationTime, or the one after the last committed when it opened.
func (s *Stream) Begin() hlc.Timestamp { return s.begin }

// Open opens a stream of scope on log, checking the resume point: a
// token's event must still be in the log (ChangeStreamHistoryLost) and be
// one this stream sees (ChangeStreamFatalError).
func Open(ctx context.Context, log Log, scope Scope, spec Spec) (*Stream, error) {
	s := &Stream{ctx: ctx, log: log, spec: spec, scope: scope}
	switch t := spec.resumeToken(); {
	case t != nil:
		if scope.Coll != "" && t.UUID == nil && !t.HighWater {
			return nil, mongoerr.New(mongoerr.InvalidResumeToken, "Attempted to resume a single-collection stream, but the resume token does not include a UUID")
		}
		s.skip = t.pos()
		if t.HasFragment {
			// A fragment's event is read again: the Splitter drops its
			// fragments up to the token's.
			s.skip = s.skip.before()
		}
		s.from = t.pos().ts
		if !t.HighWater {
			s.from-- // the token's own entry is read again, up to the token
			if err := s.checkToken(t); err != nil {
				return nil, err
			}
		} else if err := s.checkHistory(t.ClusterTime); err != nil {
			return nil, err
		}
	case spec.HasStartAt:
		s.from = spec.StartAtOperationTime - 1
		s.skip = position{ts: s.from, idx: maxIdx, inv: true}
		if err := s.checkHistory(spec.StartAtOperationTime); err != nil {
			return nil, err
		}
	default:
		s.from = log.LastCommitted()
		s.skip = position{ts: s.from, idx: maxIdx, inv: true}
	}
	s.horizon = s.from
	s.begin = s.from + 1
	s.lastPos = s.skip
	if t := spec.resumeToken(); t != nil {
		s.start = t.Doc()
	} else {
		s.start = Token{ClusterTime: s.from + 1, HighWater: true}.Doc()
	}
	return s, nil
}

func historyLost() error {
	return mongoerr.New(mongoerr.ChangeStreamHistoryLost, "Resume of change stream was not possible, as the resume point may no longer be in the oplog.")
}

// checkHistory refuses a start at ts when the log no longer holds
// everything from ts on: its oldest entry is younger.
func (s *Stream) checkHistory(ts hlc.Timestamp) error {
	first, err := s.log.OplogFirst()
	if err != nil {
		return err
	}
	if first != 0 && first > ts || s.log.OplogTrimmed() >= ts {
		return historyLost()
	}
	return nil
}

// checkToken finds the token's event: its entry must be in the log, and
// the stream must show an event at the token's position with the token's
// collection (a token from another collection's stream is not found).
func (s *Stream) checkToken(t *Token) error {
	var found, read bool
	var err error
	_, rerr := s.log.ReadOplog(t.ClusterTime-1, func(ts hlc.Timestamp, raw bsoncore.Document) bool {
		if ts != t.ClusterTime {
			return false
		}
		read = true
		var evs []event
		if evs, err = s.entryEvents(nil, ts, raw); err != nil {
			return false
		}
		for _, ev := range evs {
			if ev.pos == t.pos() && (t.UUID == nil || bytes.Equal(tokenUUID(ev.doc), t.UUID)) {
				found = true
			}
		}
		return false
	})
	if rerr != nil {
		return rerr
	}
	if err != nil {
		return err
	}
	if !read {
		first, ferr := s.log.OplogFirst()
		if ferr != nil {
			return ferr
		}
		if first == 0 || first > t.ClusterTime || s.log.OplogTrimmed() >= t.ClusterTime {
			return historyLost()
		}
	}
	if !found {
		return mongoerr.New(mongoerr.ChangeStreamFatalError, "cannot resume stream; the resume token was not found. {_data: %q}", t.Encode())
	}
	return nil
}

// tokenUUID is the UUID in an event's resume token.
func tokenUUID(ev bsoncore.Document) []byte {
	data, _ := ev.Lookup("_id", "_data").StringValueOK()
	t, err := ParseToken(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: bsoncore.NewDocumentBuilder().AppendString("_data", data).Build()})
	if err != nil {
		return nil
	}
	return t.UUID
}

// Next returns the next event, or nil when the log holds none for now (or
// the stream ended with an invalidate: see Ended).
func (s *Stream) Next() (bsoncore.Document, error) {
	for {
		if len(s.queue) > 0 {
			ev := s.queue[0]
			s.queue = s.queue[1:]
			s.prev, s.last, s.lastPos = s.last, ev.token, ev.pos
			if ev.doc == nil {
				continue // prefiltered: as a later $match dropping it
			}
			if ev.invalidate {
				s.ended = true
				s.queue = nil
			}
			return ev.doc, nil
		}
		if s.ended {
			return nil, nil
		}
		if err := opctx.Err(s.ctx); err != nil {
			return nil, err
		}
		caughtUp, err := s.read()
		if err != nil {
			return nil, err
		}
		if len(s.queue) == 0 && caughtUp {
			return nil, nil
		}
	}
}

// read reads the log from s.from until it queued readEvents events or
// readBytes, read readEntries entries, or the log ends (caughtUp).
func (s *Stream) read() (caughtUp bool, err error) {
	if s.log.OplogTrimmed() > s.from {
		return false, historyLost() // a slow reader: its next entries were trimmed
	}
	if s.feed != nil && s.from >= s.skip.ts {
		if caughtUp, ok, err := s.feed.read(s); ok || err != nil {
			return caughtUp, err
		}
	}
	n, size := 0, 0
	caughtUp = true
	var eerr error
	s.queue = s.queue[:0]
	horizon, err := s.log.ReadOplog(s.from, func(ts hlc.Timestamp, raw bsoncore.Document) bool {
		start := len(s.queue)
		evs, err := s.entryEvents(s.queue, ts, raw)
		if err != nil {
			eerr = err
			return false
		}
		if s.counting {
			s.count(raw, evs[start:])
		}
		kept := evs[:start]
		for _, ev := range evs[start:] {
			if ev.pos.after(s.skip) {
				kept = append(kept, ev)
				size += len(ev.doc)
			}
		}
		s.queue = kept
		s.from = ts
		if n++; len(s.queue) >= readEvents || size >= readBytes || n >= readEntries {
			caughtUp = false
			return false
		}
		return true
	})
	if err != nil {
		return false, err
	}
	if eerr != nil {
		return false, eerr
	}
	if caughtUp {
		s.horizon = max(horizon, s.from)
		// The log may end at an entry older than what is committed (the
		// horizon): nothing at or below the horizon is left to read.
		s.from = s.horizon
	}
	return caughtUp, nil
}

// count adds an entry and the events built from it to the stream's stats.
func (s *Stream) count(raw bsoncore.Document, evs []event) {
	s.stats.Entries++
	ops := int64(1)
	if op, _ := raw.Lookup("op").StringValueOK(); op == "c" {
		if arr, ok := raw.Lookup("o", "applyOps").ArrayOK(); ok {
			vals, _ := arr.Values()
			ops = int64(len(vals))
		}
	}
	s.stats.Operations += ops
	for _, ev := range evs {
		if ev.invalidate {
			s.stats.Invalidates++
		} else {
			s.stats.Events++
		}
		if ev.pos.after(s.skip) {
			s.stats.Kept++
		}
	}
}

// Ended reports whether the stream returned its invalidate: the cursor
// closes.
func (s *Stream) Ended() bool { return s.ended && len(s.queue) == 0 }

// ResumeToken is the postBatchResumeToken after the events returned so
// far: the last event's token, or a high water mark once the stream read
// further than its last event.
func (s *Stream) ResumeToken() bsoncore.Document {
	if len(s.queue) == 0 && !s.ended && s.horizon > s.lastPos.ts {
		if s.hw != s.horizon+1 {
			// Once per horizon: every getMore of a stream with nothing
			// new reports the same one.
			s.hw, s.hwDoc = s.horizon+1, Token{ClusterTime: s.horizon + 1, HighWater: true}.Doc()
		}
		return s.hwDoc
	}
	if s.last != nil {
		return s.last
	}
	return s.start
}

// ResumeTokenBefore is the resume token before the last event returned:
// for a batch that could not take that event (it is held for the next).
func (s *Stream) ResumeTokenBefore() bsoncore.Document {
	if s.prev != nil {
		return s.prev
	}
	return s.start
}

// LastToken is the token of the last event returned (nil: none yet), for
// the check that a later stage left each event's _id alone.
func (s *Stream) LastToken() bsoncore.Document { return s.last }

// Close releases nothing: the stream holds no iterator between reads.
func (s *Stream) Close() error { return nil }
