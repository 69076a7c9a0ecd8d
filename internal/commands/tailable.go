package commands

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/exec"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// Tailable cursors (find's tailable and awaitData) over capped
// collections. A tail cursor remembers the insertion sequence number of
// the last document it examined; each refill opens a fresh snapshot and
// reads on from there in natural order, so it sees documents inserted
// since. Reaching the end does not close it: the reply carries the cursor
// id and an empty batch until more documents come. If the document at its
// position has been removed (the collection went round and evicted it, or
// a delete took it), the cursor lost its place: CappedPositionLost, as in
// MongoDB.
//
// awaitData: a getMore that finds nothing waits, up to its maxTimeMS
// (default one second, MongoDB's), for an insert into a capped collection
// (engine.CappedInserts) and reads again. The wait selects on the
// command's context too, so it ends when the context does (ctx2's work
// makes the context end on disconnect and killOp).

// defaultAwaitTime is MongoDB's await time for a getMore of an awaitData
// cursor that sets no maxTimeMS.
const defaultAwaitTime = time.Second

// tailRefill bounds how many documents one refill reads from a snapshot.
const tailRefill = 1024

// tailSource is a tailable cursor's agg.Source.
type tailSource struct {
	e        *engine.Engine
	sel      exec.Selection
	await    bool
	seq      uint64 // the last document examined (0: none yet)
	skipped  int64
	sent     int64
	finished bool // limit reached
	buf      []bsoncore.Document
	out      []byte
}

// checkTailable refuses what MongoDB refuses of a tailable find, given
// the collection it reads: awaitData without tailable, a collection that
// is not capped, a sort other than {$natural: 1}.
func checkTailable(s *Session, req *Request, sp *findSpec) (tailable, await bool, err error) {
	if tailable, err = req.Bool("tailable", false); err != nil {
		return false, false, err
	}
	if await, err = req.Bool("awaitData", false); err != nil {
		return false, false, err
	}
	if await && !tailable {
		return false, false, mongoerr.New(mongoerr.FailedToParse, "Cannot set 'awaitData' without also setting 'tailable'")
	}
	if !tailable {
		return false, false, nil
	}
	coll := s.Env.Engine.Catalog().Collection(sp.NS.DB, sp.NS.Coll)
	if _, capped := engine.CappedOf(coll); !capped {
		return false, false, mongoerr.New(mongoerr.BadValue, "error processing query: %s planner returned error :: caused by :: tailable cursor requested on non capped collection", sp.NS)
	}
	if sort, _ := req.Document("sort"); len(sort) > 5 {
		if d, ok := naturalSort(sort); !ok || d != 1 {
			return false, false, mongoerr.New(mongoerr.BadValue, "error processing query: %s planner returned error :: caused by :: cannot use tailable option with a sort other than {$natural: 1}", sp.NS)
		}
	}
	return true, await, nil
}

// naturalSort reports whether sort is {$natural: ±1}, and its direction.
func naturalSort(sort bsoncore.Document) (int, bool) {
	elems, err := sort.Elements()
	if err != nil || len(elems) != 1 || elems[0].Key() != "$natural" {
		return 0, false
	}
	f, ok := elems[0].Value().AsFloat64OK()
	switch {
	case ok && f == 1:
		return 1, true
	case ok && f == -1:
		return -1, true
	}
	return 0, false
}

// Next returns the next matching document, or nil when there is none now
// (finished says whether there will never be one).
func (t *tailSource) Next() (bsoncore.Document, error) {
	for len(t.buf) == 0 {
		if t.finished {
			return nil, nil
		}
		more, err := t.refill()
		if err != nil || !more {
			return nil, err
		}
	}
	d := t.buf[0]
	t.buf = t.buf[1:]
	t.sent++
	if t.sel.Limit > 0 && t.sent >= t.sel.Limit {
		t.finished = true
		t.buf = nil
	}
	return d, nil
}

// refill reads on from the cursor's position in a new snapshot; more is
// false when it examined no document.
func (t *tailSource) refill() (more bool, err error) {
	r, err := t.e.NewReader(t.sel.NS)
	if err != nil {
		return false, err
	}
	defer func() {
		if cerr := r.Close(); err == nil {
			err = cerr
		}
	}()
	if t.seq > 0 {
		ok, err := r.HasPosition(t.seq)
		if err != nil {
			return false, err
		}
		if !ok {
			return false, mongoerr.New(mongoerr.CappedPositionLost, "CollectionScan died due to position in capped collection being deleted. Last seen record id: RecordId(%d)", t.seq)
		}
	}
	c, err := r.Natural(t.seq, false)
	if err != nil {
		return false, err
	}
	defer c.Close()
	t.out = t.out[:0]
	var ends []int
	n := 0
	for n < tailRefill && c.Next() {
		n++
		t.seq = c.Seq()
		d, _ := c.Value()
		pos := -1
		if t.sel.Filter != nil {
			res, err := t.sel.Filter.Exec(d)
			if err != nil {
				return false, err
			}
			if !res.Matched {
				continue
			}
			pos = res.ArrayPos
		}
		if t.skipped < t.sel.Skip {
			t.skipped++
			continue
		}
		if t.sel.Proj != nil {
			if t.out, err = t.sel.Proj.Apply(t.out, d, pos); err != nil {
				return false, err
			}
		} else {
			t.out = append(t.out, d...)
		}
		ends = append(ends, len(t.out))
	}
	start := 0
	out := append([]byte(nil), t.out...) // the buffered documents own their bytes
	for _, end := range ends {
		t.buf = append(t.buf, out[start:end:end])
		start = end
	}
	return n > 0, nil
}

func (t *tailSource) Close() error { return nil }

// awaitTime is the wait of an awaitData getMore: its maxTimeMS, or
// MongoDB's default. A getMore of any other tailable cursor may not set
// one.
func awaitTime(req *Request, await bool) (time.Duration, error) {
	v, ok := req.Arg("maxTimeMS")
	if !ok || v.Type == bsoncore.TypeNull {
		return defaultAwaitTime, nil
	}
	if !await {
		return 0, mongoerr.New(mongoerr.BadValue, "cannot set maxTimeMS on getMore command for a non-awaitData cursor")
	}
	ms, err := req.Int("maxTimeMS", 0)
	if err != nil {
		return 0, err
	}
	if ms < 0 {
		return 0, mongoerr.New(mongoerr.BadValue, "BSON field 'maxTimeMS' value must be >= 0, actual value '%d'", ms)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// fillTail fills a tailable cursor's batch; an awaitData cursor that finds
// nothing waits for inserts until wait has passed or ctx ends, and reads
// again. The wait is bounded and wakes on a channel, so it holds no
// goroutine and honours cancellation.
func fillTail(ctx context.Context, s *Session, dst []byte, ns, field string, held bsoncore.Document, t *tailSource, batch int64, wait time.Duration) (*Reply, bsoncore.Document, error) {
	var deadline <-chan time.Time
	for {
		wake := s.Env.Engine.CappedInserts() // before reading: no insert is missed
		before := t.sent
		r, kept, _, err := fillBatch(dst, ns, field, held, t, batch)
		if err != nil || held != nil || kept != nil || t.sent > before || t.finished || !t.await {
			return r, kept, err
		}
		if deadline == nil {
			if wait <= 0 {
				return r, kept, nil
			}
			timer := time.NewTimer(wait)
			defer timer.Stop()
			deadline = timer.C
		}
		select {
		case <-wake:
		case <-deadline:
			return r, kept, nil
		case <-ctx.Done():
			return r, kept, nil
		}
	}
}

// findTailable answers a tailable find: its first batch, and a cursor
// that stays open at the end of the collection.
func findTailable(s *Session, sp findSpec, await bool, dst []byte) (bsoncore.Document, error) {
	t := &tailSource{e: s.Env.Engine, sel: sp.Selection, await: await}
	ns := sp.NS.String()
	r, held, _, err := fillBatch(dst, ns, "firstBatch", nil, t, sp.batchSize)
	if err != nil {
		return nil, err
	}
	if (t.finished && held == nil) || sp.singleBatch {
		return finishCursor(r, 0, ns), nil
	}
	cur := s.Env.Cursors.Register(ns, t, held)
	cur.noTimeout = sp.noCursorTimeout
	s.Env.Cursors.Release(cur, false)
	return finishCursor(r, cur.ID, ns), nil
}

// getMoreTailable answers a getMore of a tailable cursor.
func getMoreTailable(ctx context.Context, s *Session, req *Request, dst []byte, cur *Cursor, t *tailSource, batch int64) (bsoncore.Document, error) {
	wait, err := awaitTime(req, t.await)
	if err != nil {
		s.Env.Cursors.Release(cur, false)
		return nil, err
	}
	r, held, err := fillTail(ctx, s, dst, cur.NS, "nextBatch", cur.held, t, batch, wait)
	if err != nil {
		s.Env.Cursors.Release(cur, true) // a lost position kills the cursor
		return nil, err
	}
	cur.held = held
	done := t.finished && held == nil
	s.Env.Cursors.Release(cur, done)
	if done {
		return finishCursor(r, 0, cur.NS), nil
	}
	return finishCursor(r, cur.ID, cur.NS), nil
}
