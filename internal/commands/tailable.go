package commands

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/exec"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/opctx"
)

// Tailable cursors (find's tailable and awaitData) over capped
// collections. The read is exec.Tail (natural order from the cursor's
// position; CappedPositionLost when the position is overwritten); this
// file owns the cursor: reaching the end does not close it, the reply
// carries the cursor id and an empty batch until more documents come.
//
// awaitData: a getMore that finds nothing waits, up to its maxTimeMS
// (default one second, MongoDB's), for an insert into its collection
// (engine.CappedInserts) and reads again. The wait selects on the
// command's context too, so it ends when the context does (ctx2's work
// makes the context end on disconnect and killOp).

// defaultAwaitTime is MongoDB's await time for a getMore of an awaitData
// cursor that sets no maxTimeMS.
const defaultAwaitTime = time.Second

// tailSource is a tailable cursor's agg.Source: the read, and whether
// its getMores wait for data.
type tailSource struct {
	*exec.Tail
	await bool
}

// checkTailable refuses what MongoDB refuses of a tailable find, in its
// order: awaitData without tailable, a sort other than {$natural: 1},
// singleBatch (the request's own rules), then a collection that is not
// capped (the planner's).
func checkTailable(s *Session, req *Request, f *findFields, sp *findSpec) (tailable, await bool, err error) {
	if tailable, err = req.boolOf("tailable", f.tailable, false); err != nil {
		return false, false, err
	}
	if await, err = req.boolOf("awaitData", f.awaitData, false); err != nil {
		return false, false, err
	}
	if await && !tailable {
		return false, false, mongoerr.New(mongoerr.FailedToParse, "Cannot set 'awaitData' without also setting 'tailable'")
	}
	if !tailable {
		return false, false, nil
	}
	if sort, _ := req.documentOf("sort", f.sort); len(sort) > 5 {
		if d, ok := naturalSort(sort); !ok || d != 1 {
			return false, false, mongoerr.New(mongoerr.BadValue, "cannot use tailable option with a sort other than {$natural: 1}")
		}
	}
	if sp.singleBatch {
		return false, false, mongoerr.New(mongoerr.BadValue, "cannot use tailable option with the 'singleBatch' option")
	}
	coll := s.Env.Engine.Catalog().Collection(sp.NS.DB, sp.NS.Coll)
	if _, capped := engine.CappedOf(coll); !capped {
		return false, false, mongoerr.New(mongoerr.BadValue, "error processing query: %s planner returned error :: caused by :: tailable cursor requested on non capped collection", sp.NS)
	}
	// The tailable read (exec.Tail) walks insertion order with a filter and
	// a projection; what it cannot honour yet is refused, not ignored.
	for _, o := range []struct {
		name string
		set  bool
	}{
		{"returnKey", sp.ReturnKey}, {"showRecordId", sp.ShowRecordID},
		{"min", len(sp.Min) > 5}, {"max", len(sp.Max) > 5},
		{"hint", sp.Hint.Type != 0 && !isNaturalHint(sp.Hint)},
	} {
		if o.set {
			return false, false, mongoerr.New(mongoerr.InvalidOptions, "find with tailable and %s is not supported by Cairn yet", o.name)
		}
	}
	return true, await, nil
}

// checkNatural refuses a $natural sort or hint whose value is not 1 or
// -1, as MongoDB does for every find.
func checkNatural(sort, hint bsoncore.Value) error {
	for _, f := range [...]struct {
		name string
		v    bsoncore.Value
	}{{"sort", sort}, {"hint", hint}} {
		d, ok := f.v.DocumentOK()
		if !ok || len(d) <= 5 {
			continue
		}
		v, err := d.LookupErr("$natural")
		if err != nil {
			continue
		}
		if n, ok := v.AsFloat64OK(); !ok || n != 1 && n != -1 {
			return mongoerr.New(mongoerr.BadValue, "$natural %s cannot be set to a value other than -1 or 1.", f.name)
		}
	}
	return nil
}

// naturalSort reports whether sort is {$natural: ±1}, and its direction.
func naturalSort(sort bsoncore.Document) (int, bool) {
	if len(sort) <= 5 {
		return 0, false // no sort (Elements would build an error to say so)
	}
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
func fillTail(ctx context.Context, s *Session, dst []byte, ns, field string, held bsoncore.Document, t *tailSource, batch int64, wait time.Duration) (r *Reply, kept bsoncore.Document, err error) {
	wake := func() <-chan struct{} {
		var id uint64
		if c := s.Env.Engine.Catalog().Collection(t.Namespace().DB, t.Namespace().Coll); c != nil {
			id = c.ID
		}
		return s.Env.Engine.CappedInserts(id)
	}
	err = awaitData(ctx, wait, wake, func() (bool, error) {
		before := t.Sent()
		var err error
		r, kept, _, err = fillBatch(dst, ns, field, held, t, batch)
		return err != nil || held != nil || kept != nil || t.Sent() > before || t.Finished() || !t.await, err
	})
	if err != nil {
		return nil, nil, err
	}
	return r, kept, nil
}

// awaitData tries fill until it reports it is done (it found data, or an
// error); between tries it waits for the channel wake returned before the
// try (so no write between the try and the wait is missed), until wait has
// passed (then the last try's result stands) or ctx ends. The wait is
// bounded and wakes on a channel: it holds no goroutine and honours
// cancellation (killOp, a client gone).
func awaitData(ctx context.Context, wait time.Duration, wake func() <-chan struct{}, fill func() (done bool, err error)) error {
	var deadline <-chan time.Time
	for {
		ch := wake() // before reading: no write is missed
		done, err := fill()
		if err != nil || done {
			return err
		}
		if deadline == nil {
			if wait <= 0 {
				return nil
			}
			timer := time.NewTimer(wait)
			defer timer.Stop()
			deadline = timer.C
		}
		select {
		case <-ch:
		case <-deadline:
			return nil
		case <-ctx.Done():
			return opctx.Err(ctx) // killOp or a client gone: the cursor goes too
		}
	}
}

// findTailable answers a tailable find: its first batch, and a cursor
// that stays open at the end of the collection.
func findTailable(s *Session, sp findSpec, await bool, dst []byte) (bsoncore.Document, error) {
	t := &tailSource{Tail: s.Env.Exec.Tail(sp.Selection), await: await}
	ns := sp.NS.String()
	r, held, _, err := fillBatch(dst, ns, "firstBatch", nil, t, sp.batchSize)
	if err != nil {
		return nil, err
	}
	if (t.Finished() && held == nil) || sp.singleBatch {
		return finishCursor(r, 0, ns), nil
	}
	cur := s.Env.Cursors.Register(ns, t, held)
	s.ownCursor(cur)
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
	done := t.Finished() && held == nil
	s.Env.Cursors.Release(cur, done)
	if done {
		return finishCursor(r, 0, cur.NS), nil
	}
	return finishCursor(r, cur.ID, cur.NS), nil
}

// isNaturalHint reports whether a hint is {$natural: ±1}, the one hint a
// tailable read already follows (checkNatural refuses other values).
func isNaturalHint(h bsoncore.Value) bool {
	d, ok := h.DocumentOK()
	if !ok {
		return false
	}
	_, ok = naturalSort(d)
	return ok
}
