package exec

import (
	"context"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/collation"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/planner"
)

// A find (and every other read of a selection) runs as a plan from the
// planner: a tree of stages over one snapshot, pulled one document at a
// time through agg.Source.

// Mode is how Plan plans a selection.
type Mode int

const (
	// Run plans to execute: the plan cache is read and filled, and the
	// plan's index accesses count for $indexStats.
	Run Mode = iota
	// Explain plans as MongoDB's explain does: afresh (the plan cache is
	// neither read nor filled), keeping per-stage timings and the
	// candidates' trial statistics, counting no index access.
	Explain
)

// Open is the one entry point of a read: it plans sel as mode says and
// returns the plan, ready to run; Next pulls its results, Close releases
// it and its snapshot. Execution and explain differ only in mode (explain
// renders the plan it got, after running it when the verbosity asks).
//
// A selection of one _id is the planner's IDHACK plan (planner.Open): run,
// it reads without a snapshot, which keeps the point read, the hot path,
// as cheap as a direct engine read.
//
// The plan runs under ctx, the operation's: its trial and every Next end
// with opctx.Err(ctx) once ctx ends (maxTimeMS, killOp, a client gone).
// The point read keeps no context (one read has nothing to interrupt).
func (e *Env) Open(ctx context.Context, sel Selection, mode Mode) (*planner.Exec, error) {
	if sel.Owned == nil {
		sel.Owned = e.OwnedFilter(sel.NS)
	}
	opts := planner.Options{Explain: mode == Explain, AsOf: sel.AsOf, Txn: e.txn, PrepareConflicts: e.enforcePrepare}
	if mode == Run {
		opts.Cache = e.plans
	}
	return planner.Open(ctx, e.eng, sel.NS, sel.query(), opts)
}

// Express reads the document of ns whose _id is id, appended to dst,
// without a plan (planner.Express): a find's express path, which has
// checked that its selection is a point read with nothing to do beyond
// the read (no projection, skip, hint, collation that compares the _id,
// read time), and that the Env is Expressible for ns.
func (e *Env) Express(ctx context.Context, dst []byte, ns engine.Namespace, id bsoncore.Value) (doc []byte, found bool, err error) {
	return planner.Express(ctx, e.eng, dst, ns, id, e.enforcePrepare)
}

// Expressible reports whether Express may read ns in e: not when e asks
// for more than a point read outside a transaction gives (a transaction's
// view, a shard's ownership filter on ns), where the caller opens the plan.
func (e *Env) Expressible(ns engine.Namespace) bool {
	return e.txn == nil && e.OwnedFilter(ns) == nil
}

// Count is how many documents sel selects (after its skip and limit).
func (e *Env) Count(ctx context.Context, sel Selection) (int64, error) {
	sel.CountOnly = true
	src, err := e.Open(ctx, sel, Run)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	return CountOf(src)
}

// CountOf counts the documents src yields (a view's pipeline, for count on
// a view).
func CountOf(src agg.Source) (int64, error) {
	var n int64
	for {
		d, err := src.Next()
		if err != nil {
			return 0, err
		}
		if d == nil {
			return n, nil
		}
		n++
	}
}

// Distinct returns the distinct values of the dotted path key among the
// documents sel selects, in the order first seen; array values count
// element by element, as in MongoDB. The values' total size is capped at
// maxBytes (BSONObjectTooLarge beyond).
func (e *Env) Distinct(ctx context.Context, sel Selection, key string, maxBytes int) ([]bsoncore.Value, error) {
	src, err := e.Open(ctx, sel, Run)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	return DistinctOf(src, key, maxBytes, sel.Collation)
}

// DistinctOf is Distinct over the documents src yields (a view's pipeline,
// for distinct on a view); values equal under coll (nil: simple) count
// once, the first seen standing for them, as in MongoDB.
func DistinctOf(src agg.Source, key string, maxBytes int, coll *collation.Collator) ([]bsoncore.Value, error) {
	var bc bsonx.Collator
	if coll != nil {
		bc = coll
	}
	var values []bsoncore.Value
	size := 0
	add := func(v bsoncore.Value) error {
		for _, have := range values {
			if bsonx.EqualWith(have, v, bc) {
				return nil
			}
		}
		size += len(v.Data)
		if size > maxBytes {
			return mongoerr.New(mongoerr.BSONObjectTooLarge, "distinct too big, 16mb cap")
		}
		values = append(values, bsoncore.Value{Type: v.Type, Data: append([]byte(nil), v.Data...)})
		return nil
	}
	parts := strings.Split(key, ".")
	for {
		d, err := src.Next()
		if err != nil {
			return nil, err
		}
		if d == nil {
			return values, nil
		}
		if err := pathValues(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}, parts, add); err != nil {
			return nil, err
		}
	}
}

// pathValues calls emit for each value at the dotted path, traversing arrays
// of subdocuments and unwinding a final array one level, as distinct does.
func pathValues(v bsoncore.Value, parts []string, emit func(bsoncore.Value) error) error {
	if len(parts) == 0 {
		if arr, ok := v.ArrayOK(); ok {
			vals, _ := arr.Values()
			for _, el := range vals {
				if err := emit(el); err != nil {
					return err
				}
			}
			return nil
		}
		return emit(v)
	}
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		next, err := v.Document().LookupErr(parts[0])
		if err != nil {
			return nil
		}
		return pathValues(next, parts[1:], emit)
	case bsoncore.TypeArray:
		vals, _ := v.Array().Values()
		if i, err := strconv.Atoi(parts[0]); err == nil && i >= 0 {
			if i < len(vals) {
				return pathValues(vals[i], parts[1:], emit)
			}
			return nil
		}
		for _, el := range vals {
			if el.Type == bsoncore.TypeEmbeddedDocument {
				if err := pathValues(el, parts, emit); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// ExplainRun plans sel for explain and, when execute, runs it to its end,
// handing each result to visit (nil: discard); the caller renders the plan
// (planner.Exec's QueryPlanner, ExecutionStats) and closes it.
func (e *Env) ExplainRun(ctx context.Context, sel Selection, execute bool, visit func(bsoncore.Document) error) (*planner.Exec, error) {
	ex, err := e.Open(ctx, sel, Explain)
	if err != nil || !execute {
		return ex, err
	}
	for {
		d, err := ex.Next()
		if err != nil {
			_ = ex.Close()
			return nil, err
		}
		if d == nil {
			return ex, nil
		}
		if visit != nil {
			if err := visit(d); err != nil {
				_ = ex.Close()
				return nil, err
			}
		}
	}
}
