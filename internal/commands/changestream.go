package commands

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/changestream"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/exec"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/opctx"
)

// Change streams: an aggregate whose first stage is $changeStream opens a
// changestream.Stream over the oplog, runs the stages after it over the
// stream's events, and keeps both as a tailable, awaitData cursor. Every
// batch carries postBatchResumeToken. A getMore that finds no event waits
// (up to its maxTimeMS, one second by default) for a commit group that
// wrote oplog entries (engine.OplogWrites) and reads again; the wait holds
// no goroutine and ends with the command's context. explain shows the
// stream's stages, and runs it at executionStats (changestream.Explain); serverStatus
// counts the events split and those too large (metrics.changeStreams).

// changeStreamStages are the stages MongoDB allows after $changeStream.
var changeStreamStages = map[string]bool{
	"$match": true, "$project": true, "$addFields": true, "$set": true, "$unset": true,
	"$replaceRoot": true, "$replaceWith": true, "$redact": true,
}

// csCursor is a change stream cursor's source: the pipeline's output over
// the stream.
type csCursor struct {
	agg.Source
	stream *changestream.Stream
	bound  *opctx.Bound
	// sent is when the cursor last returned events, lastN how many and
	// gap how long after the batch before (pace); open counts the node's
	// open change stream cursors, this one too until it closes.
	sent   time.Time
	lastN  int64
	gap    time.Duration
	open   *atomic.Int64
	closed bool
	// env counts the large events split and failed (serverStatus).
	env *Env
	// split is $changeStreamSplitLargeEvent (nil: not in the pipeline);
	// frags are the fragments of an event not returned yet, lastFrag and
	// prevFrag the tokens of the last two fragments returned of the
	// current event (nil: not a fragment).
	split              *changestream.Splitter
	frags              []bsoncore.Document
	lastFrag, prevFrag bsoncore.Document
	// reshapes: a later stage may change an event (not only $match), so
	// each event's _id is checked against its token.
	reshapes bool
}

// maxInternalBSON is MongoDB's BSONObjMaxInternalSize: an event above it
// fails a stream without $changeStreamSplitLargeEvent.
const maxInternalBSON = 16<<20 + 16<<10

// next is the cursor's next document: the pipeline's next event, whose _id
// must still be its resume token, or with $changeStreamSplitLargeEvent the
// event or its fragments one by one.
func (c *csCursor) next() (bsoncore.Document, error) {
	for len(c.frags) == 0 {
		d, err := c.Next()
		if err != nil || d == nil {
			return nil, err
		}
		if c.reshapes { // otherwise only $match stages: the event is the stream's own
			if id, ok := d.Lookup("_id").DocumentOK(); !ok || !bytes.Equal(id, c.stream.LastToken()) {
				return nil, mongoerr.New(mongoerr.ChangeStreamFatalError, "Encountered an event whose _id field, which contains the resume token, was modified by the pipeline. Modifying the _id field of an event makes it impossible to resume the stream from that point. Only transformations that retain the unmodified _id field are allowed. Expected: %s but found: %s", bsoncore.Document(c.stream.LastToken()), d.Lookup("_id"))
			}
		}
		if c.split == nil {
			if len(d) > maxInternalBSON {
				c.env.largeEventsFailed.Add(1) // as MongoDB: each event that fails a stream
				return nil, mongoerr.New(mongoerr.BSONObjectTooLarge, "BSONObj size: %d is invalid. Size must be between 0 and %d(16MB) First element: _id: %s", len(d), maxInternalBSON, d.Lookup("_id"))
			}
			return d, nil
		}
		out, err := c.split.Split(d)
		if err != nil {
			return nil, err
		}
		if len(out) == 1 && bytes.Equal(out[0], d) {
			c.lastFrag, c.prevFrag = nil, nil
			return d, nil
		}
		c.frags, c.lastFrag = out, nil
		if len(out) > 0 {
			c.env.largeEventsSplit.Add(1) // as MongoDB: each event split, again when a resume splits it again
		}
	}
	d := c.frags[0]
	c.frags = c.frags[1:]
	c.prevFrag = c.lastFrag
	c.lastFrag, _ = d.Lookup("_id").DocumentOK()
	return d, nil
}

// ended reports whether the cursor returned everything: the stream's
// invalidate, and no fragment left.
func (c *csCursor) ended() bool { return c.stream.Ended() && len(c.frags) == 0 }

func (c *csCursor) Close() error {
	if !c.closed {
		c.closed = true
		c.open.Add(-1)
	}
	err := c.Source.Close()
	c.bound.Close()
	return err
}

// The pace of a change stream's getMores. A getMore costs both sides a
// round trip whatever it carries (session 10's profiles: the socket's
// syscalls and the wake-ups are nearly all of what ten streams add, on the
// server and in the Go driver; an event in a batch costs little beside
// it), and every commit group woke the getMore of every stream: ten
// streams made ten round trips per group. So an awaitData getMore that
// comes less than its cursor's pace after the cursor's last events first
// waits out the rest (within its await time), and its batch holds the
// events of the groups that committed meanwhile. The pace adapts to the
// events waiting: it is the time paceEvents events took to arrive at the
// rate of the cursor's last batch (its events over the time since the
// batch before), kept between a floor and a ceiling that grow with the
// other open change stream cursors:
//   - floor, paceUnit per other stream (at most floorCap): the streams
//     together return at most about one batch per paceUnit however fast
//     events come (under a fast flow a batch reaches paceEvents before the
//     floor, and the latency stays the floor's);
//   - ceiling, ceilUnit per other stream (at most maxPace): under a slower
//     flow the round trips are fewer (about paceEvents events each, or one
//     per ceiling), at the cost of up to the ceiling in latency.
//
// A stream alone is not paced: its getMores come at most once per commit
// group, and its events wait for nothing. A stream's first events after a
// quiet spell (longer than its pace) go at once.
//
// The batches of the node's paced streams go together (paceTicks): a
// paced getMore waits for a tick another stream already waits for, when
// one lies between the floor and the ceiling after its cursor's last batch
// (the nearest to its pace, and not more than half a floor past it), and
// otherwise sets its own tick, its pace on, for the others. The streams
// whose batches went together wait for the tick the first of them sets;
// a stream opened later, or one that fell behind, joins the others' tick
// once it lies within its bounds. The streams then return their batches
// in a burst per tick rather than one by one, and each process wakes once
// per burst: session 11's loopback measure (ten request/reply connections
// whose replies are held 9 ms, together or staggered a tenth apart) put a
// round trip at 34 µs of client and 48 µs of server CPU together, 55 and
// 72 µs staggered (medians of 8 interleaved pairs, load 14–18). A tick taken is at least the floor and at most the
// ceiling after the cursor's last batch, and at most half a floor past its
// pace (TestChangeStreamReleaseBounds); the streams that went together set
// their next tick from the first one's batch, so they take it a fraction of
// a millisecond (their batches' spread) sooner than their own pace, and
// make about as many round trips as without it.
const (
	paceUnit   = 500 * time.Microsecond
	floorCap   = 5 * time.Millisecond
	ceilUnit   = time.Millisecond
	maxPace    = 10 * time.Millisecond
	paceEvents = 64
)

// pace is how long after its last events a cursor's getMore may return
// more, with open change stream cursors on the node (this one too) and n
// events in its last batch, gap after the batch before it (0: none).
func pace(open, n int64, gap time.Duration) time.Duration {
	if open <= 1 {
		return 0
	}
	floor, ceil := paceBounds(open)
	if n <= 0 || gap <= 0 {
		return floor
	}
	gap = min(gap, time.Second) // a quiet spell: the ceiling anyway
	return min(max(gap*paceEvents/time.Duration(n), floor), ceil)
}

// paceBounds are the floor and the ceiling of the pace with open change
// stream cursors on the node (more than one).
func paceBounds(open int64) (floor, ceil time.Duration) {
	return min(time.Duration(open-1)*paceUnit, floorCap), min(time.Duration(open-1)*ceilUnit, maxPace)
}

// paceTicks are the times paced getMores wait for (release), ascending,
// at most maxTicks of them, none past.
type paceTicks struct {
	mu    sync.Mutex
	ticks []time.Time
}

const maxTicks = 64

// release is when a cursor whose last batch went at sent may return its
// next one, at now, with open change stream cursors on the node, n events
// in that batch and gap after the one before: a tick already set between
// sent plus the floor and sent plus the ceiling (and not past, nor more
// than half the floor past the pace), the nearest to sent plus the pace
// (the earlier of two as near); or else
// sent plus the pace, set as a tick for the others. The zero time: no
// pace (a stream alone, or no batch yet); a time not after now: no wait
// (the pace passed already and no tick is within the ceiling).
func (p *paceTicks) release(now, sent time.Time, open, n int64, gap time.Duration) time.Time {
	pc := pace(open, n, gap)
	if pc == 0 || sent.IsZero() {
		return time.Time{}
	}
	floor, ceil := paceBounds(open)
	// A tick past the pace by more than half the floor is not taken: a
	// stream of a faster flow is not held for a slower one's.
	lo, want, hi := sent.Add(floor), sent.Add(pc), sent.Add(min(ceil, pc+floor/2))
	if lo.Before(now) {
		lo = now
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	k := 0
	for k < len(p.ticks) && p.ticks[k].Before(now) {
		k++
	}
	p.ticks = append(p.ticks[:0], p.ticks[k:]...)
	var best time.Time
	for _, t := range p.ticks {
		if t.Before(lo) {
			continue
		}
		if t.After(hi) {
			break
		}
		if best.IsZero() || absDur(t.Sub(want)) < absDur(best.Sub(want)) {
			best = t
		}
	}
	if !best.IsZero() {
		return best
	}
	if want.After(now) && len(p.ticks) < maxTicks {
		i := len(p.ticks)
		for i > 0 && p.ticks[i-1].After(want) {
			i--
		}
		p.ticks = slices.Insert(p.ticks, i, want)
	}
	return want
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// sentEvents records a batch of n events returned at now (the pace's
// rate). A full batch (its batchSize reached, or an event held for the
// next) says nothing of the rate but that events wait: the next pace is
// the floor.
func (c *csCursor) sentEvents(now time.Time, n int64, full bool) {
	c.gap, c.lastN = 0, n
	if !c.sent.IsZero() && !full {
		c.gap = now.Sub(c.sent)
	}
	c.sent = now
}

// reshapes reports whether a change stream's later stages may change an
// event: any but $match.
func reshapes(stages []bsoncore.Document) bool {
	for _, st := range stages {
		if stageName(st) != "$match" {
			return true
		}
	}
	return false
}

// stageName is a pipeline stage's name ("" when it is not {name: arg}).
func stageName(d bsoncore.Document) string {
	els, err := d.Elements()
	if err != nil || len(els) != 1 {
		return ""
	}
	return els[0].Key()
}

// refuseChangeStreamElsewhere refuses $changeStream past the first stage:
// on a standalone MongoDB's refusal of the stage comes first (40573).
func refuseChangeStreamElsewhere(s *Session, stages []bsoncore.Document) error {
	for _, st := range stages {
		if stageName(st) == "$changeStream" {
			if s.Env.Repl == nil {
				return noChangeStreams()
			}
			return mongoerr.New(mongoerr.StageNotFirst, "$changeStream is only valid as the first stage in a pipeline")
		}
	}
	return nil
}

func noChangeStreams() error {
	return mongoerr.New(mongoerr.ChangeStreamNoReplSet, "The $changeStream stage is only supported on replica sets")
}

// changeStreamScope checks where the stream is opened, as MongoDB does:
// allChangesForCluster only on admin with {aggregate: 1}; not on the
// internal databases or system collections; not on a view.
func changeStreamScope(s *Session, ns engine.Namespace, collectionless bool, spec changestream.Spec) (changestream.Scope, error) {
	if spec.AllChangesForCluster {
		if ns.DB != "admin" || !collectionless {
			name := ns.String()
			if collectionless {
				name = ns.DB + ".$cmd.aggregate"
			}
			return changestream.Scope{}, mongoerr.New(mongoerr.InvalidOptions, "A $changeStream with 'allChangesForCluster:true' may only be opened on the 'admin' database, and with no collection name; found %s", name)
		}
		return changestream.Scope{}, nil
	}
	switch ns.DB {
	case "admin", "config", "local":
		return changestream.Scope{}, mongoerr.New(mongoerr.InvalidNamespace, "$changeStream may not be opened on the internal %s database", ns.DB)
	}
	if collectionless {
		return changestream.Scope{DB: ns.DB}, nil
	}
	if strings.HasPrefix(ns.Coll, "system.") {
		return changestream.Scope{}, mongoerr.New(mongoerr.InvalidNamespace, "$changeStream may not be opened on the internal %s collection", ns)
	}
	if isView(s, ns.DB, ns.Coll) {
		return changestream.Scope{}, mongoerr.New(mongoerr.CommandNotSupportedOnView, "$changeStream cannot be run on views: %s is a view, not a collection", ns)
	}
	return changestream.Scope{DB: ns.DB, Coll: ns.Coll}, nil
}

// csPipeline is a change stream aggregate's pipeline as parsed: the
// $changeStream stage, what it watches, the stages after it and whether
// $changeStreamSplitLargeEvent ends it.
type csPipeline struct {
	spec  changestream.Spec
	scope changestream.Scope
	rest  []bsoncore.Document
	split bool
}

// parseChangeStream checks a pipeline whose first stage is $changeStream,
// as MongoDB does, for the aggregate and for its explain.
func parseChangeStream(s *Session, ns engine.Namespace, collectionless bool, stages []bsoncore.Document) (csPipeline, error) {
	if s.Env.Repl == nil {
		return csPipeline{}, noChangeStreams()
	}
	arg, _ := stages[0].Elements()
	spec, err := changestream.ParseSpec(arg[0].Value())
	if err != nil {
		return csPipeline{}, err
	}
	scope, err := changeStreamScope(s, ns, collectionless, spec)
	if err != nil {
		return csPipeline{}, err
	}
	rest := ownedAll(stages[1:])
	split := -1 // $changeStreamSplitLargeEvent's place in rest
	for i, st := range rest {
		switch name := stageName(st); {
		case name == "$changeStream":
			return csPipeline{}, mongoerr.New(mongoerr.StageNotFirst, "$changeStream is only valid as the first stage in a pipeline")
		case name == "$changeStreamSplitLargeEvent":
			if d, ok := st.Index(0).Value().DocumentOK(); !ok || len(d) != 5 {
				return csPipeline{}, mongoerr.New(mongoerr.SplitEventSpec, "$changeStreamSplitLargeEvent spec should be an empty object")
			}
			if split < 0 {
				split = i
			}
		case !changeStreamStages[name]:
			if err := agg.KnownStage(name); err != nil {
				return csPipeline{}, err
			}
			return csPipeline{}, mongoerr.New(mongoerr.IllegalOperation, "%s is not permitted in a $changeStream pipeline", name)
		}
	}
	if split >= 0 && split != len(rest)-1 {
		return csPipeline{}, mongoerr.New(mongoerr.SplitEventNotLast, "$changeStreamSplitLargeEvent must be the last stage in the pipeline")
	}
	if split < 0 && changestream.ResumesFromFragment(spec) {
		return csPipeline{}, changestream.FragmentNeedsSplit()
	}
	if split >= 0 {
		rest = rest[:split]
	}
	return csPipeline{spec: spec, scope: scope, rest: rest, split: split >= 0}, nil
}

// aggregateChangeStream answers an aggregate whose first stage is
// $changeStream.
func aggregateChangeStream(ctx context.Context, s *Session, req *Request, ns engine.Namespace, collectionless bool, stages []bsoncore.Document, dst []byte) (bsoncore.Document, error) {
	p, err := parseChangeStream(s, ns, collectionless, stages)
	if err != nil {
		return nil, err
	}
	if explain, _ := req.Bool("explain", false); explain {
		x := &explainer{ctx: ctx, s: s, verbosity: "queryPlanner"}
		body, err := x.changeStream(p, req, ns, collectionless)
		if err != nil {
			return nil, err
		}
		return x.reply(dst, body, owned(req.Body))
	}
	spec, scope, rest := p.spec, p.scope, p.rest
	var splitter *changestream.Splitter
	if p.split {
		splitter = changestream.NewSplitter(spec)
	}
	batch, err := aggregateBatchSize(req)
	if err != nil {
		return nil, err
	}
	opts, err := aggregateOptions(s, req, ns, collectionless)
	if err != nil {
		return nil, err
	}
	bound := opctx.NewBound()
	detach := bound.Attach(ctx)
	defer detach()
	stream, out, err := s.Env.Exec.ChangeStream(bound.Context(), exec.ChangeStream{Scope: scope, Spec: spec, Stages: rest, Opts: opts})
	if err != nil {
		bound.Close()
		return nil, err
	}
	s.Env.changeStreams.Add(1)
	c := &csCursor{Source: out, stream: stream, bound: bound, open: &s.Env.changeStreams, split: splitter, env: s.Env, reshapes: reshapes(rest)}
	cursorNS := ns.String()
	if collectionless {
		cursorNS = ns.DB + ".$cmd.aggregate"
	}
	r, held, err := fillChangeStream(dst, "firstBatch", nil, c, batch)
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	if c.ended() && held == nil {
		_ = c.Close()
		return finishCursor(r, 0, cursorNS), nil
	}
	cur := s.Env.Cursors.Register(cursorNS, c, held)
	s.ownCursor(cur)
	s.Env.Cursors.Release(cur, false)
	return finishCursor(r, cur.ID, cursorNS), nil
}

// getMoreChangeStream answers a getMore of a change stream cursor: what
// the stream has, or, when it has nothing, what arrives within the await
// time.
func getMoreChangeStream(ctx context.Context, s *Session, req *Request, dst []byte, cur *Cursor, c *csCursor, batch int64) (bsoncore.Document, error) {
	wait, err := awaitTime(req, true)
	if err != nil {
		s.Env.Cursors.Release(cur, false)
		return nil, err
	}
	detach := c.bound.Attach(ctx)
	r, held, err := awaitChangeStream(ctx, s, dst, cur.held, c, batch, wait)
	detach()
	if err != nil {
		s.Env.Cursors.Release(cur, true)
		return nil, changeStreamLabels(err)
	}
	cur.held = held
	done := c.ended() && held == nil
	s.Env.Cursors.Release(cur, done)
	if done {
		return finishCursor(r, 0, cur.NS), nil
	}
	return finishCursor(r, cur.ID, cur.NS), nil
}

// resumableCodes are the errors after which MongoDB labels a change
// stream's getMore error ResumableChangeStreamError: a driver (wire
// version 9 and above) resumes only after errors so labelled (or network
// errors and CursorNotFound).
var resumableCodes = map[mongoerr.Code]bool{
	mongoerr.HostUnreachable: true, mongoerr.HostNotFound: true, mongoerr.NetworkTimeout: true,
	mongoerr.ShutdownInProgress: true, mongoerr.PrimarySteppedDown: true, mongoerr.ExceededTimeLimit: true,
	mongoerr.SocketException: true, mongoerr.NotWritablePrimary: true, mongoerr.InterruptedAtShutdown: true,
	mongoerr.InterruptedDueToReplStateChange: true, mongoerr.NotPrimaryNoSecondaryOk: true,
	mongoerr.NotPrimaryOrSecondary: true, mongoerr.FailedToSatisfyReadPreference: true,
}

// changeStreamLabels adds MongoDB's change stream error label to a
// getMore's error: ResumableChangeStreamError for the resumable codes,
// NonResumableChangeStreamError for a stream that cannot go on (a lost
// history, a resume token not found or modified).
func changeStreamLabels(err error) error {
	e, ok := mongoerr.As(err)
	if !ok {
		return err
	}
	switch {
	case resumableCodes[e.Code]:
		return withLabels(err, bson.A{"ResumableChangeStreamError"})
	case e.Code == mongoerr.ChangeStreamHistoryLost || e.Code == mongoerr.ChangeStreamFatalError:
		return withLabels(err, bson.A{"NonResumableChangeStreamError"})
	}
	return err
}

// awaitChangeStream fills a batch; an empty one waits for oplog writes
// (awaitData) and reads again.
func awaitChangeStream(ctx context.Context, s *Session, dst []byte, held bsoncore.Document, c *csCursor, batch int64, wait time.Duration) (r *Reply, kept bsoncore.Document, err error) {
	now := time.Now()
	if at := s.Env.paceTicks.release(now, c.sent, c.open.Load(), c.lastN, c.gap); at.After(now) {
		pause := min(at.Sub(now), wait)
		if err := s.paceWait(ctx, pause); err != nil {
			return nil, nil, err
		}
		wait -= pause
	}
	defer func() {
		if r != nil && r.batchN > 0 {
			c.sentEvents(time.Now(), r.batchN, kept != nil || batch > 0 && r.batchN >= batch)
		}
	}()
	err = awaitData(ctx, wait, s.Env.Engine.OplogWrites, func() (bool, error) {
		var err error
		r, kept, err = fillChangeStream(dst, "nextBatch", held, c, batch)
		return err != nil || r.batchN > 0 || kept != nil || c.ended(), err
	})
	if err != nil {
		return nil, nil, err
	}
	return r, kept, nil
}

// paceWait waits out a getMore's pace, or until ctx ends. A timer ends
// it whatever the client does, so the connection is told not to watch
// the socket meanwhile (ShortWait).
func (s *Session) paceWait(ctx context.Context, pause time.Duration) error {
	if s.ShortWait != nil {
		s.ShortWait(true)
		defer s.ShortWait(false)
	}
	t := time.NewTimer(pause)
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		t.Stop()
		return opctx.Err(ctx)
	}
}

// fillChangeStream appends up to limit events (0: no limit, negative: an
// empty batch) into a batch named field, stopping early at the byte cap
// (the event that did not fit is held for the next batch), and closes the
// batch with its postBatchResumeToken. Unlike fillBatch it never reads
// ahead: the resume token must be that of the last event sent.
func fillChangeStream(dst []byte, field string, held bsoncore.Document, c *csCursor, limit int64) (r *Reply, kept bsoncore.Document, err error) {
	var b batchWriter
	b.start(dst, field)
	if held != nil {
		b.add(held)
	}
	for limit >= 0 && (limit == 0 || b.n < limit) {
		d, err := c.next()
		if err != nil {
			return nil, nil, err
		}
		if d == nil {
			break
		}
		if !b.add(d) {
			kept = append(bsoncore.Document(nil), d...)
			break
		}
	}
	r = b.end()
	// The resume token: the last event's (or a high water mark), but the
	// one before a document held back, and a fragment's while its event
	// has fragments left.
	pbrt := c.stream.ResumeToken()
	switch {
	case kept != nil && c.prevFrag != nil:
		pbrt = c.prevFrag
	case kept != nil:
		pbrt = c.stream.ResumeTokenBefore()
	case len(c.frags) > 0:
		pbrt = c.lastFrag
	}
	*r.Raw() = bsoncore.AppendDocumentElement(*r.Raw(), "postBatchResumeToken", pbrt)
	return r, kept, nil
}

// preImagesOption reads create's or collMod's changeStreamPreAndPostImages
// ({enabled: <bool>}, nothing else) as MongoDB's IDL does, and returns it
// normalized as the option element the collection keeps.
func preImagesOption(cmd string, v bsoncore.Value) (bsoncore.Element, error) {
	const name = "changeStreamPreAndPostImages"
	d, ok := v.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.%s' is the wrong type '%s', expected type 'object'", cmd, name, typeName(v.Type))
	}
	els, err := d.Elements()
	if err != nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "%s.%s: %v", cmd, name, err)
	}
	enabled, found := false, false
	for _, e := range els {
		if e.Key() != "enabled" {
			return nil, mongoerr.New(mongoerr.UnknownField, "BSON field '%s.%s.%s' is an unknown field.", cmd, name, e.Key())
		}
		if enabled, ok = e.Value().BooleanOK(); !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.%s.enabled' is the wrong type '%s', expected type 'bool'", cmd, name, typeName(e.Value().Type))
		}
		found = true
	}
	if !found {
		return nil, mongoerr.New(mongoerr.IDLMissingField, "BSON field '%s.%s.enabled' is missing but a required field", cmd, name)
	}
	doc := bsoncore.NewDocumentBuilder().AppendBoolean("enabled", enabled).Build()
	return bsoncore.AppendDocumentElement(nil, name, doc), nil
}

// changeStream explains a change stream aggregate as MongoDB 7.0 does: a
// $cursor reading local.oplog.rs, the stages $changeStream unfolds into
// (changestream.Explain), then the stages after it. At executionStats and
// allPlansExecution verbosity it runs the stream, reading the log itself,
// to the log's end (as MongoDB's explain runs its tailable pipeline to
// EOF), and reports what it read: the $cursor's executionStats (the
// entries read) and each $changeStream stage's nReturned. The stages after
// them show no counts, as in Cairn's other aggregate explains.
func (x *explainer) changeStream(p csPipeline, req *Request, ns engine.Namespace, collectionless bool) (bson.D, error) {
	ex := changestream.Explain(p.spec, changestream.EngineLog(x.s.Env.Engine))
	var es bson.D
	if x.execute() {
		opts, err := aggregateOptions(x.s, req, ns, collectionless)
		if err != nil {
			return nil, err
		}
		began := time.Now()
		stream, err := x.s.Env.Exec.ExplainChangeStream(x.ctx, exec.ChangeStream{Scope: p.scope, Spec: p.spec, Stages: p.rest, Opts: opts})
		if err != nil {
			return nil, err
		}
		ex = changestream.ExplainRun(p.spec, stream)
		ms := time.Since(began).Milliseconds()
		var stages bson.D
		if err := bson.Unmarshal(ex.Plan, &stages); err != nil {
			return nil, err
		}
		stages = append(stages, bson.E{Key: "nReturned", Value: ex.Entries}, bson.E{Key: "docsExamined", Value: ex.Entries})
		es = bson.D{
			{Key: "executionSuccess", Value: true}, {Key: "nReturned", Value: ex.Entries},
			{Key: "executionTimeMillis", Value: ms}, {Key: "totalKeysExamined", Value: int64(0)},
			{Key: "totalDocsExamined", Value: ex.Entries}, {Key: "executionStages", Value: stages},
		}
		if x.verbosity == "allPlansExecution" {
			es = append(es, bson.E{Key: "allPlansExecution", Value: bson.A{}})
		}
	}
	cursor := bson.D{{Key: "queryPlanner", Value: bson.D{
		{Key: "namespace", Value: engine.OplogNS.String()},
		{Key: "winningPlan", Value: bson.Raw(ex.Plan)},
		{Key: "rejectedPlans", Value: bson.A{}},
	}}}
	if es != nil {
		cursor = append(cursor, bson.E{Key: "executionStats", Value: es})
	}
	stages := bson.A{bson.D{{Key: "$cursor", Value: cursor}}}
	for _, st := range ex.Stages {
		stages = append(stages, bson.Raw(st))
	}
	stages = append(stages, rawStages(p.rest)...)
	if p.split {
		stages = append(stages, bson.D{{Key: "$changeStreamSplitLargeEvent", Value: bson.D{}}})
	}
	return bson.D{{Key: "stages", Value: stages}}, nil
}
