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
	// runs in (InTxn).
	txn *engine.Txn
	// feed is the oplog's newest entries, read once for every change
	// stream (changestream.Feed).
	feed *changestream.Feed
	// ownedNS and owned, when set, filter every read of that collection
	// to the documents of chunks this shard owns (Owning).
	ownedNS engine.Namespace
	owned   func(bsoncore.Document) bool
	// enforcePrepare: reads wait on prepare conflicts (EnforcingPrepare).
	enforcePrepare bool
}

// EnforcingPrepare is an Env whose reads wait on prepare conflicts: one
// that reaches a document a prepared transaction holds waits until it
// commits or aborts and then reads the outcome (planner.Options.
// PrepareConflicts). Reads of other Envs read past prepared documents,
// as MongoDB's local and majority reads do.
func (e *Env) EnforcingPrepare() *Env {
	c := *e
	c.enforcePrepare = true
	return &c
}

// Owning is an Env whose reads of collection ns keep only the documents
// owned reports true for: a shard's reads that carry a shardVersion, which
// return no orphans (SHARDING_FILTER; planner.Query.Owned), and whose
// updates, deletes and findAndModify of ns leave orphans alone (a write a
// router sends to several shards must not change a migration's copy as
// well). Reads of other collections ($lookup's, $unionWith's) are not
// filtered.
func (e *Env) Owning(ns engine.Namespace, owned func(bsoncore.Document) bool) *Env {
	c := *e
	c.ownedNS, c.owned = ns, owned
	return &c
}

// OwnedFilter is the filter Owning gave reads of ns, nil when none.
func (e *Env) OwnedFilter(ns engine.Namespace) func(bsoncore.Document) bool {
	if e.owned != nil && e.ownedNS == ns {
		return e.owned
	}
	return nil
}

// InTxn is an Env whose reads and writes run inside transaction t: reads
// see its snapshot and its own writes, writes are its statements.
func (e *Env) InTxn(t *engine.Txn) *Env {
	c := *e
	c.txn = t
	return &c
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
