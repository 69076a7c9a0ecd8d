package exec

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/changestream"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/planner"
)

// Env is what every execution reads: the engine, the plan cache and the
// change streams' Feed. One per engine (a server has one; tests open many
// in one process, each with its own Env, so no state is shared between
// them).
type Env struct {
	eng *engine.Engine
	// plans remembers the winner of each query shape's trial (see
	// planner.Cache and its invariant "Cache follows the catalog").
	plans *planner.Cache
	// txn, when set, is the transaction every read and write of this Env
	// runs in (Scope.Txn).
	txn *engine.Txn
	// feed is the oplog's newest entries, read once for every change
	// stream (changestream.Feed).
	feed *changestream.Feed
	// ownedNS and owned, when set, filter every read of that collection
	// to the documents of chunks this shard owns (Scope.Owned).
	ownedNS engine.Namespace
	owned   func(bsoncore.Document) bool
	// enforcePrepare: reads wait on prepare conflicts (Scope.EnforcePrepare).
	enforcePrepare bool
}

// Scope narrows an Env to one command's circumstances; Within makes the
// narrowed Env (one copy, however many fields are set: a command's
// environment is made per statement, TestTxnPointReadAllocs).
type Scope struct {
	// Txn: every read and write runs inside this transaction — reads see
	// its snapshot and its own writes, writes are its statements.
	Txn *engine.Txn
	// OwnedNS and Owned: reads of collection OwnedNS keep only the
	// documents Owned reports true for — a shard's reads that carry a
	// shardVersion, which return no orphans (SHARDING_FILTER;
	// planner.Query.Owned) — and updates, deletes and findAndModify of it
	// leave orphans alone (a write a router sends to several shards must
	// not change a migration's copy as well). Reads of other collections
	// ($lookup's, $unionWith's) are not filtered.
	OwnedNS engine.Namespace
	Owned   func(bsoncore.Document) bool
	// EnforcePrepare: reads wait on prepare conflicts — one that reaches a
	// document a prepared transaction holds waits until it commits or
	// aborts and then reads the outcome (planner.Options.PrepareConflicts).
	// Reads of other Envs read past prepared documents, as MongoDB's local
	// and majority reads do.
	EnforcePrepare bool
}

// Within is e narrowed to sc (e itself when sc narrows nothing).
func (e *Env) Within(sc Scope) *Env {
	if sc.Txn == nil && sc.Owned == nil && !sc.EnforcePrepare {
		return e
	}
	c := *e
	c.narrow(sc)
	return &c
}

// narrow sets what sc sets (apart from Within, which stays small enough to
// be inlined, so a caller's narrowed Env need not escape).
func (e *Env) narrow(sc Scope) {
	if sc.Txn != nil {
		e.txn = sc.Txn
	}
	if sc.Owned != nil {
		e.ownedNS, e.owned = sc.OwnedNS, sc.Owned
	}
	if sc.EnforcePrepare {
		e.enforcePrepare = true
	}
}

// OwnedFilter is the filter Within (Scope.Owned) gave reads of ns, nil when none.
func (e *Env) OwnedFilter(ns engine.Namespace) func(bsoncore.Document) bool {
	if e.owned != nil && e.ownedNS == ns {
		return e.owned
	}
	return nil
}

// Txn is the transaction the Env runs in, nil outside one.
func (e *Env) Txn() *engine.Txn { return e.txn }

// New returns the execution environment over eng, with an empty plan cache.
func New(eng *engine.Engine) *Env {
	return &Env{eng: eng, plans: planner.NewCache(), feed: changestream.NewFeed(changestream.EngineLog(eng))}
}

// Engine is the engine the Env executes on.
func (e *Env) Engine() *engine.Engine { return e.eng }

// PlanCache is the Env's plan cache (planCacheClear, tests).
func (e *Env) PlanCache() *planner.Cache { return e.plans }

// ClearPlanShape forgets the cached plans of sel's query shape (its
// filter, sort, projection and collation, any skip and limit) and returns
// how many it dropped (planCacheClear with query).
func (e *Env) ClearPlanShape(sel Selection) int {
	q := sel.query()
	return e.plans.ClearShape(sel.NS.String(), &q)
}

// Insert inserts docs into ns through the commit pipeline; opts.Ordered
// stops at the first document that fails, opts.BypassValidation skips the
// collection's validator (bypassDocumentValidation).
func (e *Env) Insert(ns engine.Namespace, docs []bsoncore.Document, opts engine.InsertOptions) (engine.InsertResult, error) {
	opts.Txn = e.txn
	return e.eng.InsertWith(ns, docs, opts)
}
