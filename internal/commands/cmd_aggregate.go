package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/opctx"
)

// cmdAggregate runs an aggregation pipeline over a collection, or over no
// collection ({aggregate: 1}, for stages such as $documents). A leading
// $match becomes the scan's filter, so the planner can use an index for it.
func cmdAggregate(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	ns, collectionless, err := aggregateTarget(req)
	if err != nil {
		return nil, err
	}
	stages, err := req.Docs("pipeline")
	if err != nil {
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
	cursorOpts, err := req.Document("cursor")
	if err != nil {
		return nil, err
	}
	if cursorOpts == nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "The 'cursor' option is required, except for aggregate with the explain argument")
	}
	batch := int64(DefaultFirstBatch)
	if v, err := cursorOpts.LookupErr("batchSize"); err == nil {
		n, ok := numberAsInt(v)
		if !ok || n < 0 {
			return nil, mongoerr.New(mongoerr.BadValue, "cursor.batchSize must not be negative")
		}
		batch = n
	}
	opts, err := aggregateOptions(s, req, ns.DB)
	if err != nil {
		return nil, err
	}
	opts.Stats = aggStats{s: s, ns: ns, collectionless: collectionless} // $collStats, $indexStats, $currentOp
	p, err := agg.Parse(ownedAll(stages), opts)
	if err != nil {
		return nil, err
	}
	var writer *outputWriter // $out or $merge (agg_output.go)
	if o := p.Output(); o != nil {
		if writer, err = prepareOutput(s.Env.Engine, o); err != nil {
			return nil, err
		}
		p = p.WithoutOutput()
	}
	// The pipeline may outlive this request as a cursor: it runs under a
	// Bound that this request, then each getMore, attaches to.
	bound := opctx.NewBound()
	defer bound.Attach(ctx)()
	bctx := bound.Context()
	var input agg.Source
	if !collectionless {
		// The leading $match becomes the scan's filter and a $sort after
		// it the scan's order, where the planner can use an index, unless
		// the $match reads variables ($$NOW, let): those exist only inside
		// the pipeline, so it stays there (see pushDown, shared with
		// explain so that explain shows what runs).
		sel, rest, err := pushDown(ns, ownedAll(stages))
		if err != nil {
			return nil, err
		}
		if len(rest) < len(stages) {
			if p, err = agg.Parse(rest, opts); err != nil {
				return nil, err
			}
			if writer != nil {
				p = p.WithoutOutput() // the writer carries out $out/$merge
			}
		}
		sel.sortMemory, sel.allowDiskUse = opts.MaxMemory, opts.AllowDiskUse
		if input, err = sel.open(bctx, s.Env.Engine); err != nil {
			bound.Close()
			return nil, err
		}
	}
	run, err := p.Run(bctx, input)
	if err != nil {
		if input != nil {
			_ = input.Close()
		}
		bound.Close()
		return nil, err
	}
	out := &boundSource{Source: run, bound: bound}
	cursorNS := ns.String()
	if collectionless {
		cursorNS = ns.DB + ".$cmd.aggregate"
	}
	if writer != nil {
		return writer.write(out, dst, cursorNS)
	}
	r, held, done, err := fillBatch(dst, cursorNS, "firstBatch", nil, out, batch)
	if err != nil {
		_ = out.Close()
		return nil, err
	}
	if done {
		_ = out.Close()
		return finishCursor(r, 0, cursorNS), nil
	}
	cur := s.Env.Cursors.Register(cursorNS, out, held)
	cur.maxTime, _ = opctx.Remaining(ctx)
	s.Env.Cursors.Release(cur, false)
	return finishCursor(r, cur.ID, cursorNS), nil
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

// aggregateOptions gathers the pipeline's settings from the command.
func aggregateOptions(s *Session, req *Request, db string) (agg.Options, error) {
	cv, err := requestVars(req)
	if err != nil {
		return agg.Options{}, err
	}
	opts := agg.Options{Now: cv.now, Vars: cv.let, DB: db, Catalog: aggCatalog{s.Env.Engine}, MaxMemory: sortMemory(s)}
	if opts.AllowDiskUse, err = req.Bool("allowDiskUse", false); err != nil {
		return opts, err
	}
	if err := checkCollation(req); err != nil {
		return opts, err
	}
	return opts, nil
}

// ownedAll copies pipeline stages out of the request buffer: a cursor keeps
// the parsed pipeline past this request (see newSelection).
func ownedAll(stages []bsoncore.Document) []bsoncore.Document {
	out := make([]bsoncore.Document, len(stages))
	for i, st := range stages {
		out[i] = owned(st)
	}
	return out
}

// aggCatalog lets $lookup and $unionWith read other collections.
type aggCatalog struct{ eng *engine.Engine }

func (c aggCatalog) Scan(ctx context.Context, db, coll string) (agg.Source, error) {
	sel, err := newSelection(engine.Namespace{DB: db, Coll: coll}, nil)
	if err != nil {
		return nil, err
	}
	return sel.open(ctx, c.eng)
}
