package engine

import (
	"context"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/opctx"
)

// Operations in progress, as currentOp lists them. The engine keeps the
// registry because its own long operations (index builds; TTL passes are
// not registered yet) run without a client command of their own; the command layer registers each
// client command in the same registry, so one list shows both.
//
// Invariant "A reused Op is a new operation": an Op begun again in the
// same memory (BeginIn) takes a new id and a live context; killOp, a
// session's Interrupt and currentOp, which may hold the Op from its last
// operation, read its id and state under its lock, so that a kill of an
// ended operation never reaches the next one (Kill checks the id it
// found; an own context is cancelled under the lock) and currentOp never
// lists an ended operation or one twice (List checks the id it found).
// TestReusedOpIsNew races Kill and List against End and BeginIn, under
// -race.
//
// Invariant "Command bytes live with their op": an Op may hold its command
// document by reference (a request aliases the connection's read buffer);
// Status copies it under the Op's lock and End, under the same lock, stops
// later copies, so a currentOp never reads a buffer reused by the next
// request.

// testAfterFound, when set (tests only), runs in Kill and List between
// finding Ops in the lists and taking their locks: where an Op may end and
// begin again (TestReusedOpIsNew).
var testAfterFound func()

// Ops is the registry of operations in progress. The zero value is ready.
type Ops struct {
	next atomic.Int64
	// Intrusive lists (Op.prev, Op.next) rather than a map: every command
	// adds and removes its entry once, which a list does by relinking two
	// pointers, where a map hashes twice and a sync.Map allocates; only
	// killOp and currentOp, which are rare, walk them. The lists are
	// sharded by op id so that concurrent connections do not queue on one
	// mutex (issue 15: the registry's lock was a visible share of a
	// 16-connection read workload's CPU).
	shards [opShards]opList
}

const opShards = 16

// opList is one shard of the registry, padded to its own cache line.
type opList struct {
	mu   sync.Mutex
	head *Op // newest first
	_    [64 - 16]byte
}

func (o *Ops) shard(id int64) *opList { return &o.shards[uint64(id)%opShards] }

// OpInfo describes an operation when it begins.
type OpInfo struct {
	// Desc names the thread of work: "conn12", "IndexBuildsCoordinator".
	Desc string
	// ConnID and Client identify the client connection (0 and "" for
	// internal work).
	ConnID int64
	Client string
	// Op is MongoDB's op kind: "command", "query", "insert", "none".
	Op string
	// NS is "db.collection" or "db.$cmd". When it is empty, DB is set
	// and the namespace is derived from Command (its first field's string
	// value names the collection) only when listed, to keep Begin cheap.
	NS string
	DB string
	// Command is the command document; the Op may alias it until End.
	Command bsoncore.Document
	// Cancel, when set, cancels the operation's context; killOp calls it
	// with opctx.ErrKilled.
	Cancel context.CancelCauseFunc
	// Parent, when set (instead of Cancel), makes the Op carry its own
	// context under Parent (Op.Context), which killOp cancels: a client
	// command's, at no allocation beyond the Op.
	Parent context.Context
	// Began, when set, is when the operation began, as the caller read the
	// clock already (a command reads it once); zero means now.
	Began time.Time
}

// Op is one operation in progress.
type Op struct {
	ID      int64
	Started time.Time
	info    OpInfo
	ctx     opctx.Canceler // used when info.Parent is set

	prev, next *Op // in Ops' list, under Ops.mu

	mu       sync.Mutex
	ended    bool
	msg      string
	done     int64
	total    int64
	progress bool
	killed   bool // killOp asked it to stop
}

// OpStatus is a copy of an Op's state, safe to keep.
type OpStatus struct {
	ID      int64
	Started time.Time
	OpInfo
	// Msg and Progress report how far a long operation got ("Index Build:
	// scanning collection", done of total); HasProgress says they are set.
	Msg                 string
	Done, Total         int64
	HasProgress, Active bool
	// KillPending: killOp asked the operation to stop and it has not yet.
	KillPending bool
}

// Begin registers an operation; call End when it finishes.
func (o *Ops) Begin(info OpInfo) *Op {
	op := &Op{ID: o.next.Add(1), Started: info.began(), info: info}
	if info.Parent != nil {
		op.ctx.Init(info.Parent)
	}
	o.link(op)
	return op
}

// BeginIn is Begin into op, an Op of the caller's that is not registered:
// a new one (the zero Op) or one that began here and ended (invariant "A
// reused Op is a new operation"). A connection keeps one and begins each
// of its commands in it, allocating nothing. info.Parent must be set (the
// commands layer reuses an Op only under a parent never done: the
// server's context).
func (o *Ops) BeginIn(op *Op, info OpInfo) *Op {
	started := info.began()
	id := o.next.Add(1)
	// Under the Op's lock: Kill, Interrupt and List, which may still hold
	// op from its last operation, read its id and state under it.
	op.mu.Lock()
	op.ID, op.Started, op.info = id, started, info
	op.ended, op.killed, op.progress = false, false, false
	op.msg, op.done, op.total = "", 0, 0
	op.ctx.Reuse(info.Parent)
	op.mu.Unlock()
	o.link(op)
	return op
}

// began is when the operation began: Began, or now when it is unset.
func (info *OpInfo) began() time.Time {
	if info.Began.IsZero() {
		return time.Now()
	}
	return info.Began
}

// link adds op to its shard's list.
func (o *Ops) link(op *Op) {
	l := o.shard(op.ID)
	l.mu.Lock()
	op.next = l.head
	if l.head != nil {
		l.head.prev = op
	}
	l.head = op
	l.mu.Unlock()
}

// Context is the operation's own context (see OpInfo.Parent); nil without
// a Parent.
func (op *Op) Context() context.Context {
	if op.info.Parent == nil {
		return nil
	}
	return &op.ctx
}

// End removes op from the registry; after it, op no longer reads its
// command bytes (see "Command bytes live with their op").
func (o *Ops) End(op *Op) {
	if op == nil {
		return
	}
	op.mu.Lock()
	op.ended = true
	op.info.Command = nil
	op.mu.Unlock()
	l := o.shard(op.ID)
	l.mu.Lock()
	if op.prev != nil {
		op.prev.next = op.next
	} else if l.head == op {
		l.head = op.next
	}
	if op.next != nil {
		op.next.prev = op.prev
	}
	op.prev, op.next = nil, nil
	l.mu.Unlock()
	if op.info.Parent != nil {
		op.ctx.End()
	}
}

// Kill interrupts operation id, as killOp does; it reports whether id is in
// progress and can be interrupted. The operation ends on its own, at its next
// check of its context (package opctx).
func (o *Ops) Kill(id int64) bool {
	l := o.shard(id)
	l.mu.Lock()
	op := l.head
	for op != nil && op.ID != id {
		op = op.next
	}
	l.mu.Unlock()
	if op == nil {
		return false
	}
	if testAfterFound != nil {
		testAfterFound()
	}
	return op.interrupt(id, opctx.ErrKilled, true)
}

// Interrupt cancels op's context with cause (a client gone, say), if it is
// still in progress and can be cancelled: the operation op holds when
// Interrupt takes its lock.
func (op *Op) Interrupt(cause error) { op.interrupt(0, cause, false) }

// interrupt cancels op's operation id (any, when id is 0) if it is in
// progress: an Op found before it ended may hold the next operation by the
// time its lock is taken (BeginIn), which is not the one asked for.
func (op *Op) interrupt(id int64, cause error, kill bool) bool {
	op.mu.Lock()
	cancel, own := op.info.Cancel, op.info.Parent != nil
	if op.ended || id != 0 && op.ID != id {
		cancel, own = nil, false
	}
	op.killed = op.killed || kill && (cancel != nil || own)
	if own {
		// Cancelled under the lock: once it is released, BeginIn may
		// make the context the next operation's.
		op.ctx.Cancel(cause)
	}
	op.mu.Unlock()
	if cancel != nil && !own {
		cancel(cause)
	}
	return own || cancel != nil
}

// SetProgress records a long operation's message and progress.
func (op *Op) SetProgress(msg string, done, total int64) {
	if op == nil {
		return
	}
	op.mu.Lock()
	op.msg, op.done, op.total, op.progress = msg, done, total, true
	op.mu.Unlock()
}

// List copies the status of every operation in progress, oldest first.
func (o *Ops) List() []OpStatus {
	var out []OpStatus
	type found struct {
		op *Op
		id int64
	}
	var ops []found
	for i := range o.shards {
		l := &o.shards[i]
		l.mu.Lock()
		for op := l.head; op != nil; op = op.next {
			ops = append(ops, found{op, op.ID})
		}
		l.mu.Unlock()
	}
	if testAfterFound != nil {
		testAfterFound()
	}
	for _, f := range ops {
		op := f.op
		op.mu.Lock()
		if !op.ended && op.ID == f.id { // not ended, nor begun again (BeginIn)
			st := OpStatus{ID: op.ID, Started: op.Started, OpInfo: op.info, Msg: op.msg,
				Done: op.done, Total: op.total, HasProgress: op.progress, Active: true, KillPending: op.killed}
			st.Command = append(bsoncore.Document(nil), op.info.Command...)
			if st.NS == "" {
				st.NS = commandNS(st.DB, st.Command)
			}
			if st.Desc == "" && st.ConnID != 0 {
				st.Desc = "conn" + strconv.FormatInt(st.ConnID, 10)
			}
			out = append(out, st)
		}
		op.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// commandNS is the namespace a command acts on: db.<collection> when its
// first field names one, db.$cmd otherwise.
func commandNS(db string, cmd bsoncore.Document) string {
	if el, err := cmd.IndexErr(0); err == nil {
		if c, ok := el.Value().StringValueOK(); ok && c != "" {
			return db + "." + c
		}
	}
	return db + ".$cmd"
}

// Ops is the engine's registry of operations in progress.
func (e *Engine) Ops() *Ops { return &e.ops }
