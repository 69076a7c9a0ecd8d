package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/exec"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/opctx"
)

// cmdAggregate runs an aggregation pipeline over a collection, or over no
// collection ({aggregate: 1}, for stages such as $documents): it parses the
// command into an exec.Aggregate, which exec runs (pushing a leading $match
// and $sort into the collection read, writing $out and $merge), and
// returns the results as a cursor.
func cmdAggregate(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	ns, collectionless, err := aggregateTarget(req)
	if err != nil {
		return nil, err
	}
	stages, err := req.Docs("pipeline")
	if err != nil {
		return nil, err
	}
	if len(stages) > 0 && stageName(stages[0]) == "$changeStream" {
		if s.sess.etx != nil { // MongoDB 7.0 refuses a stream opened in a transaction
			return nil, mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "$changeStream cannot be used in a transaction")
		}
		return aggregateChangeStream(ctx, s, req, ns, collectionless, stages, dst) // changestream.go
	}
	if err := refuseChangeStreamElsewhere(s, stages); err != nil {
		return nil, err
	}
	if explain, _ := req.Bool("explain", false); explain {
		x := &explainer{ctx: ctx, s: s, verbosity: "queryPlanner"}
		body, err := x.aggregateStages(ns, collectionless, ownedAll(stages), req)
		if err != nil {
			return nil, err
		}
		return x.reply(dst, body, owned(req.Body))
	}
	batch, err := aggregateBatchSize(req)
	if err != nil {
		return nil, err
	}
	if s.sess.etx != nil {
		if last := len(stages) - 1; last >= 0 {
			if el, err := stages[last].IndexErr(0); err == nil && (el.Key() == "$out" || el.Key() == "$merge") {
				return nil, mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "%s cannot be used in a transaction", el.Key())
			}
		}
	}
	a := exec.Aggregate{NS: ns, Collectionless: collectionless, Stages: ownedAll(stages)}
	if a.Opts, err = aggregateOptions(s, req, ns, collectionless); err != nil {
		return nil, err
	}
	a.Opts.Stats = aggStats{s: s, ns: ns, collectionless: collectionless} // $collStats, $indexStats, $currentOp
	if a.Bypass, err = req.Bool("bypassDocumentValidation", false); err != nil {
		return nil, err
	}
	if a.Hint, err = aggregateHint(req); err != nil {
		return nil, err
	}
	if a.AsOf, err = readAtClusterTime(s, req); err != nil {
		return nil, err
	}
	// The pipeline may outlive this request as a cursor's: it runs under a
	// Bound that this request, then each getMore, attaches to.
	bound := opctx.NewBound()
	defer bound.Attach(ctx)()
	run, err := s.x().Aggregate(bound.Context(), a)
	if err != nil || run == nil {
		bound.Close()
	}
	if err != nil {
		return nil, err
	}
	cursorNS := ns.String()
	if collectionless {
		cursorNS = ns.DB + ".$cmd.aggregate"
	}
	if run == nil {
		// $out or $merge wrote the results: an empty first batch and no
		// cursor, as MongoDB replies.
		return cursorReply(dst, cursorNS, 0, nil), nil
	}
	out := &boundSource{Source: run, bound: bound}
	r, held, done, err := fillBatch(dst, cursorNS, "firstBatch", nil, out, batch)
	if err != nil {
		_ = out.Close()
		return nil, err
	}
	r.atClusterTime = a.AsOf
	if done {
		_ = out.Close()
		return finishCursor(r, 0, cursorNS), nil
	}
	cur := s.Env.Cursors.Register(cursorNS, out, held)
	s.ownCursor(cur)
	cur.maxTime, _ = opctx.Remaining(ctx)
	if !collectionless {
		cur.coll = s.Env.Engine.Catalog().Collection(ns.DB, ns.Coll)
	}
	s.Env.Cursors.Release(cur, false)
	return finishCursor(r, cur.ID, cursorNS), nil
}

// aggregateBatchSize reads the command's required cursor option and its
// batchSize (default 101); 0 becomes -1: an empty first batch and a live
// cursor.
func aggregateBatchSize(req *Request) (int64, error) {
	cursorOpts, err := req.Document("cursor")
	if err != nil {
		return 0, err
	}
	if cursorOpts == nil {
		return 0, mongoerr.New(mongoerr.FailedToParse, "The 'cursor' option is required, except for aggregate with the explain argument")
	}
	if v, err := cursorOpts.LookupErr("batchSize"); err == nil {
		return batchSizeOf("aggregate.cursor.batchSize", v)
	}
	return DefaultFirstBatch, nil
}

// aggregateTarget reads the command's first field: a collection name, or 1
// for a collection-less pipeline.
func aggregateTarget(req *Request) (engine.Namespace, bool, error) {
	first := req.First()
	if _, ok := first.StringValueOK(); ok {
		coll, err := req.Collection()
		return engine.Namespace{DB: req.DB, Coll: coll}, false, err
	}
	if n, ok := numberAsInt(first); ok && n == 1 {
		return engine.Namespace{DB: req.DB}, true, nil
	}
	return engine.Namespace{}, false, mongoerr.New(mongoerr.FailedToParse, "Invalid command format: the 'aggregate' field must specify a collection name or 1")
}

// aggregateOptions gathers the pipeline's settings from the command, the
// collation included (the command's, else the collection's or view's
// default; a collection-less pipeline's default is simple).
func aggregateOptions(s *Session, req *Request, ns engine.Namespace, collectionless bool) (agg.Options, error) {
	cv, err := requestVars(req)
	if err != nil {
		return agg.Options{}, err
	}
	opts := agg.Options{Now: cv.now, Vars: cv.let, DB: ns.DB, MaxMemory: sortMemory(s)}
	if opts.AllowDiskUse, err = req.Bool("allowDiskUse", false); err != nil {
		return opts, err
	}
	// needsMerge: a router's shard half of a split pipeline (agg.Split);
	// a $group ending it emits partial states for the router's merge.
	if opts.NeedsMerge, err = req.Bool("needsMerge", false); err != nil {
		return opts, err
	}
	if collectionless {
		if v, ok := req.Arg("collation"); ok {
			opts.Collation, err = parseCollationValue("aggregate.collation", v)
		}
		return opts, err
	}
	opts.Collation, err = commandCollation(s, req, ns)
	return opts, err
}

// aggregateHint reads the command's hint, which forces the plan of the
// collection read (the pushed-down $match and $sort, or a whole scan).
func aggregateHint(req *Request) (bsoncore.Value, error) {
	v, ok := req.Arg("hint")
	if !ok {
		return bsoncore.Value{}, nil
	}
	return hintValue(v)
}

// ownedAll copies pipeline stages out of the request buffer: a cursor keeps
// the parsed pipeline past this request.
func ownedAll(stages []bsoncore.Document) []bsoncore.Document { return exec.OwnedAll(stages) }
