package commands

import (
	"context"
	"os"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/exec"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/opctx"
	"github.com/cairndb/cairn/internal/planner"
)

// cmdExplain explains find, count, distinct, update, delete, findAndModify
// and aggregate in MongoDB's shape. The plan is the one the command would
// run, as a stage tree rendered by the planner; unless the verbosity is
// queryPlanner it runs (reads only: update and delete count what they would
// do, and write nothing) and reports true counts per stage.
func cmdExplain(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	inner, err := req.Document("explain")
	if err != nil || inner == nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "explain command requires a nested object")
	}
	verbosity, err := req.String("verbosity", "allPlansExecution")
	if err != nil {
		return nil, err
	}
	switch verbosity {
	case "queryPlanner", "executionStats", "allPlansExecution":
	default:
		return nil, mongoerr.New(mongoerr.BadValue, "verbosity string must be one of {'queryPlanner', 'executionStats', 'allPlansExecution'}")
	}
	innerReq, err := NewRequest(owned(inner), req.DB, nil)
	if err != nil {
		return nil, err
	}
	if c, ok := lookup(innerReq.Name); ok {
		if _, err := checkFields(&c, innerReq.Name, innerReq.fields()); err != nil {
			return nil, err // the explained command's fields follow its own rule
		}
		if err := checkNested(&c, innerReq.Name, innerReq); err != nil {
			return nil, err
		}
	}
	// The explained command's own maxTimeMS bounds it too, inside the
	// explain command's (applied by Run).
	innerMax, err := maxTimeMS(innerReq)
	if err != nil {
		return nil, err
	}
	ctx, stop := opctx.WithMaxTime(ctx, innerMax)
	defer stop()
	x := &explainer{ctx: ctx, s: s, verbosity: verbosity}
	var body bson.D
	if name, ok := innerReq.First().StringValueOK(); ok && isView(s, innerReq.DB, name) && innerReq.Name != "aggregate" {
		if body, err = x.explainOnView(innerReq, name); err != nil {
			return nil, err
		}
		return x.reply(dst, body, inner)
	}
	switch innerReq.Name {
	case "find":
		body, err = x.find(innerReq)
	case "count":
		body, err = x.count(innerReq)
	case "distinct":
		body, err = x.distinct(innerReq)
	case "delete":
		body, err = x.delete(innerReq)
	case "update":
		body, err = x.update(innerReq)
	case "findAndModify", "findandmodify":
		body, err = x.findAndModify(innerReq)
	case "aggregate":
		body, err = x.aggregate(innerReq)
	default:
		return nil, notYet("explain of " + innerReq.Name)
	}
	if err != nil {
		return nil, err
	}
	return x.reply(dst, body, inner)
}

// explainer runs one explain.
type explainer struct {
	// ctx is the explain operation's: the plan it runs checks it.
	ctx       context.Context
	s         *Session
	verbosity string
}

func (x *explainer) execute() bool { return x.verbosity != "queryPlanner" }

// reply finishes the explain document: explainVersion, the sections,
// command and serverInfo.
func (x *explainer) reply(dst []byte, body bson.D, inner bsoncore.Document) (bsoncore.Document, error) {
	raw, err := bson.Marshal(body)
	if err != nil {
		return nil, err
	}
	r := NewReply(dst).String("explainVersion", "1")
	elems, _ := bsoncore.Document(raw).Elements()
	for _, el := range elems {
		r.Value(el.Key(), el.Value())
	}
	r.Doc("command", inner)
	host, _ := os.Hostname()
	r.Doc("serverInfo", doc("host", host, "port", int32(x.s.Env.Config.Port), "version", MongoVersion, "gitVersion", "cairn"))
	return r.Finish(), nil
}

// wrapper is a stage the command puts over the read plan (COUNT, UPDATE,
// DELETE): its name, parameters, and counters when executed.
type wrapper struct {
	name   string
	params bson.D
	stats  bson.D // stage-specific counters
}

// run explains sel: exec plans it in explain mode and, when the verbosity
// asks, runs it; this renders queryPlanner and executionStats, with w over
// the plan when set.
func (x *explainer) run(sel exec.Selection, w *wrapper) (bson.D, error) {
	ex, err := x.s.x().ExplainRun(x.ctx, sel, x.execute(), nil)
	if err != nil {
		return nil, err
	}
	defer ex.Close()
	return x.sections(ex, sel.NS, w)
}

// sections renders queryPlanner (and executionStats) of a planned ex.
func (x *explainer) sections(ex *planner.Exec, ns engine.Namespace, w *wrapper) (bson.D, error) {
	qp := ex.QueryPlanner(ns.String())
	if w != nil {
		for i := range qp {
			if qp[i].Key == "winningPlan" {
				qp[i].Value = w.wrap(qp[i].Value.(bson.D), false)
			}
		}
	}
	out := bson.D{{Key: "queryPlanner", Value: qp}}
	if !x.execute() {
		return out, nil
	}
	es := ex.ExecutionStats(x.verbosity == "allPlansExecution")
	if w != nil {
		for i := range es {
			switch es[i].Key {
			case "nReturned":
				es[i].Value = int64(0)
			case "executionStages":
				es[i].Value = w.wrap(es[i].Value.(bson.D), true)
			}
		}
	}
	return append(out, bson.E{Key: "executionStats", Value: es}), nil
}

// wrap puts the wrapper stage over a rendered plan. It returns nothing
// itself, so its counters are one work per input work plus the final one.
func (w *wrapper) wrap(plan bson.D, withStats bool) bson.D {
	d := bson.D{{Key: "stage", Value: w.name}}
	d = append(d, w.params...)
	if withStats {
		var works int64
		for _, e := range plan {
			if e.Key == "works" {
				works, _ = e.Value.(int64)
			}
		}
		d = append(d, bson.D{
			{Key: "nReturned", Value: int64(0)}, {Key: "executionTimeMillisEstimate", Value: int64(0)},
			{Key: "works", Value: works + 1}, {Key: "advanced", Value: int64(0)}, {Key: "needTime", Value: works},
			{Key: "needYield", Value: int64(0)}, {Key: "saveState", Value: int64(0)}, {Key: "restoreState", Value: int64(0)},
			{Key: "isEOF", Value: int32(1)},
		}...)
		d = append(d, w.stats...)
	}
	return append(d, bson.E{Key: "inputStage", Value: plan})
}

func (x *explainer) find(req *Request) (bson.D, error) {
	sp, err := parseFind(x.s, req)
	if err != nil {
		return nil, err
	}
	return x.run(sp.Selection, nil)
}

func (x *explainer) count(req *Request) (bson.D, error) {
	sel, err := parseCountSpec(x.s, req)
	if err != nil {
		return nil, err
	}
	return x.counted(sel, "COUNT", "nCounted")
}

// counted explains a plan under a wrapper stage whose counter (nCounted,
// nWouldDelete) is the number of results, known only after the run.
func (x *explainer) counted(sel exec.Selection, stage, counter string) (bson.D, error) {
	ex, n, err := x.s.x().ExplainCount(x.ctx, sel, x.execute())
	if err != nil {
		return nil, err
	}
	defer ex.Close()
	w := &wrapper{name: stage, stats: bson.D{{Key: counter, Value: n}}}
	if stage == "COUNT" {
		w.stats = append(w.stats, bson.E{Key: "nSkipped", Value: int64(0)})
	}
	return x.sections(ex, sel.NS, w)
}

func (x *explainer) distinct(req *Request) (bson.D, error) {
	sel, err := selectionFor(x.s, req, "query")
	if err != nil {
		return nil, err
	}
	return x.run(sel, nil)
}

func (x *explainer) delete(req *Request) (bson.D, error) {
	wb, err := parseWriteBatch(req, "deletes")
	if err != nil {
		return nil, err
	}
	if len(wb.stmts) != 1 {
		return nil, mongoerr.New(mongoerr.InvalidLength, "explained delete must have exactly one statement")
	}
	cv, err := writeVars(x.s, req, wb.ns)
	if err != nil {
		return nil, err
	}
	d, err := parseDeleteStatement(wb.ns, wb.stmts[0], cv)
	if err != nil {
		return nil, err
	}
	d.Sel.Limit = d.Limit
	return x.counted(d.Sel, "DELETE", "nWouldDelete")
}

func (x *explainer) update(req *Request) (bson.D, error) {
	wb, err := parseWriteBatch(req, "updates")
	if err != nil {
		return nil, err
	}
	if len(wb.stmts) != 1 {
		return nil, mongoerr.New(mongoerr.InvalidLength, "explained update must have exactly one statement")
	}
	cv, err := writeVars(x.s, req, wb.ns)
	if err != nil {
		return nil, err
	}
	spec, err := parseUpdateStatement(wb.ns, wb.stmts[0], cv)
	if err != nil {
		return nil, err
	}
	return x.updateOver(spec)
}

// updateOver explains an update: exec runs the selection and applies the
// update to each document in memory, counting what would change.
func (x *explainer) updateOver(spec exec.Update) (bson.D, error) {
	ex, would, err := x.s.Env.Exec.ExplainUpdate(x.ctx, spec, x.execute())
	if err != nil {
		return nil, err
	}
	defer ex.Close()
	upserts := int64(0)
	if would.Upsert {
		upserts = 1
	}
	w := &wrapper{name: "UPDATE", stats: bson.D{{Key: "nMatched", Value: would.Matched}, {Key: "nWouldModify", Value: would.Modified}, {Key: "nWouldUpsert", Value: upserts}}}
	body, err := x.sections(ex, spec.Sel.NS, w)
	if err == nil && x.execute() {
		for i := range body {
			if body[i].Key == "executionStats" {
				body[i].Value = append(body[i].Value.(bson.D), bson.E{Key: "wouldInsert", Value: upserts == 1})
			}
		}
	}
	return body, err
}

func (x *explainer) findAndModify(req *Request) (bson.D, error) {
	sel, cv, err := parseFindAndModifySelection(x.s, req)
	if err != nil {
		return nil, err
	}
	remove, err := req.Bool("remove", false)
	if err != nil {
		return nil, err
	}
	if remove {
		return x.counted(sel, "DELETE", "nWouldDelete")
	}
	u, ok := req.Arg("update")
	if !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "Either an update or remove=true must be specified")
	}
	arrayFilters, err := arrayFiltersOf(req.Body)
	if err != nil {
		return nil, err
	}
	mod, err := parseModifier(u, arrayFilters, false, cv, nil, sel.Collation)
	if err != nil {
		return nil, err
	}
	upsertFlag, err := req.Bool("upsert", false)
	if err != nil {
		return nil, err
	}
	return x.updateOver(exec.Update{Sel: sel, Mod: mod, Upsert: upsertFlag})
}

func (x *explainer) aggregate(req *Request) (bson.D, error) {
	ns, collectionless, err := aggregateTarget(req)
	if err != nil {
		return nil, err
	}
	stages, err := req.Docs("pipeline")
	if err != nil {
		return nil, err
	}
	if len(stages) > 0 && stageName(stages[0]) == "$changeStream" {
		p, err := parseChangeStream(x.s, ns, collectionless, stages)
		if err != nil {
			return nil, err
		}
		return x.changeStream(p, req, ns, collectionless) // changestream.go
	}
	if err := refuseChangeStreamElsewhere(x.s, stages); err != nil {
		return nil, err
	}
	return x.aggregateStages(ns, collectionless, ownedAll(stages), req)
}

// aggregateStages explains a pipeline: the part exec pushes into the
// collection read as a $cursor stage with its plan, then the other stages
// as given. A pipeline wholly pushed down explains like a find.
func (x *explainer) aggregateStages(ns engine.Namespace, collectionless bool, stages []bsoncore.Document, req *Request) (bson.D, error) {
	a := exec.Aggregate{NS: ns, Collectionless: collectionless, Stages: stages}
	a.Opts.MaxMemory = sortMemory(x.s)
	var err error
	if a.Opts.AllowDiskUse, err = req.Bool("allowDiskUse", false); err != nil {
		return nil, err
	}
	if a.Hint, err = aggregateHint(req); err != nil {
		return nil, err
	}
	if !collectionless && exec.StartsWithVersions(stages) {
		return x.versionsScan(a)
	}
	ex, rest, err := x.s.x().ExplainAggregate(x.ctx, a, x.execute())
	if err != nil {
		return nil, err
	}
	if ex == nil {
		return bson.D{{Key: "stages", Value: rawStages(rest)}}, nil
	}
	defer ex.Close()
	if coll, _, _, isView := x.s.Env.Engine.Catalog().Resolve(ns.DB, ns.Coll); isView {
		ns.Coll = coll // a view's plan reads its source collection
	}
	body, err := x.sections(ex, ns, nil)
	if err != nil {
		return nil, err
	}
	if len(rest) == 0 {
		return body, nil
	}
	cursor := bson.D{{Key: "$cursor", Value: body}}
	return bson.D{{Key: "stages", Value: append(bson.A{cursor}, rawStages(rest)...)}}, nil
}

func rawStages(stages []bsoncore.Document) bson.A {
	out := bson.A{}
	for _, st := range stages {
		out = append(out, bson.Raw(st))
	}
	return out
}

// versionsScan explains a pipeline that starts with $versions: a $cursor
// whose plan is the history scan (VERSIONS_SCAN, with the bounds a $match
// after it gave), then the stages after $versions.
func (x *explainer) versionsScan(a exec.Aggregate) (bson.D, error) {
	vs, rest, err := x.s.Env.Exec.ExplainVersions(x.ctx, a, x.execute())
	if err != nil {
		return nil, err
	}
	defer vs.Close()
	id, versions := vs.BoundsString()
	plan := bson.D{{Key: "stage", Value: "VERSIONS_SCAN"}, {Key: "indexBounds", Value: bson.D{{Key: "_id", Value: bson.A{id}}, {Key: "version", Value: bson.A{versions}}}}}
	body := bson.D{{Key: "queryPlanner", Value: bson.D{{Key: "namespace", Value: a.NS.String()}, {Key: "winningPlan", Value: plan}, {Key: "rejectedPlans", Value: bson.A{}}}}}
	if x.execute() {
		stage := append(bson.D{}, plan...)
		stage = append(stage, bson.E{Key: "nReturned", Value: vs.NReturned}, bson.E{Key: "keysExamined", Value: vs.KeysExamined()}, bson.E{Key: "docsExamined", Value: int64(0)})
		body = append(body, bson.E{Key: "executionStats", Value: bson.D{
			{Key: "executionSuccess", Value: true}, {Key: "nReturned", Value: vs.NReturned},
			{Key: "totalKeysExamined", Value: vs.KeysExamined()}, {Key: "totalDocsExamined", Value: int64(0)},
			{Key: "executionStages", Value: stage}}})
	}
	cursor := bson.D{{Key: "$cursor", Value: body}}
	return bson.D{{Key: "stages", Value: append(bson.A{cursor}, rawStages(rest)...)}}, nil
}
