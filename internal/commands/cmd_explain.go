package commands

import (
	"context"
	"os"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
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

// run plans sp, runs it when the verbosity asks (each result goes to
// visit), and renders queryPlanner and executionStats, with w over the
// plan when set.
func (x *explainer) run(sp findSpec, w *wrapper, visit func(bsoncore.Document) error) (bson.D, error) {
	ex, err := sp.prepare(x.ctx, x.s.Env.Engine, true)
	if err != nil {
		return nil, err
	}
	defer ex.Close()
	if x.execute() {
		for {
			d, err := ex.Next()
			if err != nil {
				return nil, err
			}
			if d == nil {
				break
			}
			if visit != nil {
				if err := visit(d); err != nil {
					return nil, err
				}
			}
		}
	}
	return x.sections(ex, sp, w)
}

// sections renders queryPlanner (and executionStats) of a planned ex.
func (x *explainer) sections(ex *planner.Exec, sp findSpec, w *wrapper) (bson.D, error) {
	qp := ex.QueryPlanner(sp.ns.String())
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
	return x.run(sp, nil, nil)
}

func (x *explainer) count(req *Request) (bson.D, error) {
	sp, err := parseCountSpec(req)
	if err != nil {
		return nil, err
	}
	var n int64
	w := &wrapper{name: "COUNT"}
	body, err := x.run(sp, w, func(bsoncore.Document) error { n++; return nil })
	if err != nil {
		return nil, err
	}
	w.stats = bson.D{{Key: "nCounted", Value: n}, {Key: "nSkipped", Value: int64(0)}}
	return x.rewrap(body, w, sp)
}

// rewrap re-renders when a wrapper's counters are known only after the run.
func (x *explainer) rewrap(body bson.D, w *wrapper, sp findSpec) (bson.D, error) {
	for i := range body {
		if body[i].Key != "executionStats" {
			continue
		}
		es := body[i].Value.(bson.D)
		for j := range es {
			if es[j].Key == "executionStages" {
				st := es[j].Value.(bson.D)
				inner := st[len(st)-1].Value.(bson.D)
				es[j].Value = w.wrap(inner, true)
			}
		}
	}
	return body, nil
}

// parseCountSpec reads a count command (or the count explain explains) as
// a selection.
func parseCountSpec(req *Request) (findSpec, error) {
	sp, err := selectionFor(req, "query")
	if err != nil {
		return sp, err
	}
	if sp.skip, err = req.Int("skip", 0); err != nil {
		return sp, err
	}
	if sp.limit, err = req.Int("limit", 0); err != nil {
		return sp, err
	}
	if sp.skip < 0 {
		return sp, mongoerr.New(mongoerr.BadValue, "skip value is negative in count query")
	}
	if sp.limit < 0 {
		sp.limit = -sp.limit
	}
	sp.countOnly = true
	return sp, parseHint(req, &sp)
}

func (x *explainer) distinct(req *Request) (bson.D, error) {
	sp, err := selectionFor(req, "query")
	if err != nil {
		return nil, err
	}
	return x.run(sp, nil, nil)
}

func (x *explainer) delete(req *Request) (bson.D, error) {
	wb, err := parseWriteBatch(req, "deletes")
	if err != nil {
		return nil, err
	}
	if len(wb.stmts) != 1 {
		return nil, mongoerr.New(mongoerr.InvalidLength, "explained delete must have exactly one statement")
	}
	cv, err := requestVars(req)
	if err != nil {
		return nil, err
	}
	sp, err := statementFilter(wb.ns, wb.stmts[0], "delete.deletes", cv)
	if err != nil {
		return nil, err
	}
	if v, err := wb.stmts[0].LookupErr("limit"); err == nil {
		if l, ok := numberAsInt(v); ok && l == 1 {
			sp.limit = 1
		}
	}
	return x.deleteOver(sp)
}

func (x *explainer) deleteOver(sp findSpec) (bson.D, error) {
	var n int64
	w := &wrapper{name: "DELETE"}
	body, err := x.run(sp, w, func(bsoncore.Document) error { n++; return nil })
	if err != nil {
		return nil, err
	}
	w.stats = bson.D{{Key: "nWouldDelete", Value: n}}
	return x.rewrap(body, w, sp)
}

func (x *explainer) update(req *Request) (bson.D, error) {
	wb, err := parseWriteBatch(req, "updates")
	if err != nil {
		return nil, err
	}
	if len(wb.stmts) != 1 {
		return nil, mongoerr.New(mongoerr.InvalidLength, "explained update must have exactly one statement")
	}
	cv, err := requestVars(req)
	if err != nil {
		return nil, err
	}
	spec, err := parseUpdateStatement(wb.ns, wb.stmts[0], cv)
	if err != nil {
		return nil, err
	}
	if !spec.multi {
		spec.sel.limit = 1
	}
	return x.updateOver(spec)
}

// updateOver explains an update: it runs the selection and applies the
// modifier to each document in memory, counting what would change.
func (x *explainer) updateOver(spec updateSpec) (bson.D, error) {
	var matched, modified int64
	w := &wrapper{name: "UPDATE"}
	body, err := x.run(spec.sel, w, func(d bsoncore.Document) error {
		matched++
		_, pos := spec.sel.filter.MatchDetails(d)
		next, err := spec.mod.apply(d, pos)
		if err != nil {
			return err
		}
		if next != nil {
			modified++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	upserts := int64(0)
	if matched == 0 && spec.upsert && x.execute() {
		upserts = 1
	}
	w.stats = bson.D{{Key: "nMatched", Value: matched}, {Key: "nWouldModify", Value: modified}, {Key: "nWouldUpsert", Value: upserts}}
	body, err = x.rewrap(body, w, spec.sel)
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
		return x.deleteOver(sel)
	}
	u, ok := req.Arg("update")
	if !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "Either an update or remove=true must be specified")
	}
	arrayFilters, err := arrayFiltersOf(req.Body)
	if err != nil {
		return nil, err
	}
	mod, err := parseModifier(u, arrayFilters, false, cv, nil)
	if err != nil {
		return nil, err
	}
	upsertFlag, err := req.Bool("upsert", false)
	if err != nil {
		return nil, err
	}
	return x.updateOver(updateSpec{sel: sel, mod: mod, upsert: upsertFlag})
}

// aggregate explains a pipeline: the part pushed into the collection read
// ($match, then $sort) as a $cursor stage with its plan, then the other
// stages as given. A pipeline wholly pushed down explains like a find.
func (x *explainer) aggregate(req *Request) (bson.D, error) {
	ns, collectionless, err := aggregateTarget(req)
	if err != nil {
		return nil, err
	}
	stages, err := req.Docs("pipeline")
	if err != nil {
		return nil, err
	}
	return x.aggregateStages(ns, collectionless, ownedAll(stages), req)
}

func (x *explainer) aggregateStages(ns engine.Namespace, collectionless bool, stages []bsoncore.Document, req *Request) (bson.D, error) {
	if collectionless {
		return bson.D{{Key: "stages", Value: rawStages(stages)}}, nil
	}
	sel, rest, err := pushDown(ns, stages)
	if err != nil {
		return nil, err
	}
	sel.sortMemory = sortMemory(x.s)
	if sel.allowDiskUse, err = req.Bool("allowDiskUse", false); err != nil {
		return nil, err
	}
	body, err := x.run(sel, nil, nil)
	if err != nil {
		return nil, err
	}
	if len(rest) == 0 {
		return body, nil
	}
	cursor := bson.D{{Key: "$cursor", Value: body}}
	return bson.D{{Key: "stages", Value: append(bson.A{cursor}, rawStages(rest)...)}}, nil
}

// pushDown splits a pipeline into the selection the collection read does
// (a leading $match without variables, and a $sort right after it) and the
// stages that remain.
func pushDown(ns engine.Namespace, stages []bsoncore.Document) (findSpec, []bsoncore.Document, error) {
	var match bsoncore.Document
	rest := stages
	if len(rest) > 0 {
		if m, ok := stageArg(rest[0], "$match"); ok && !strings.Contains(string(m), "$$") {
			match, rest = m, rest[1:]
		}
	}
	sel, err := newSelection(ns, match)
	if err != nil {
		return sel, nil, err
	}
	if len(rest) > 0 {
		if srt, ok := stageArg(rest[0], "$sort"); ok && simpleSort(srt) {
			if err := parseProjectionAndSort(&Request{Body: NewReply(nil).Doc("sort", srt).End()}, &sel); err == nil {
				rest = rest[1:]
				// A $limit after the $sort makes it a top-k sort.
				if len(rest) > 0 {
					if el, err := rest[0].IndexErr(0); err == nil && el.Key() == "$limit" {
						if n, ok := numberAsInt(el.Value()); ok && n > 0 {
							sel.limit, rest = n, rest[1:]
						}
					}
				}
				if sel.limit == 0 && len(rest) > 0 {
					sel.distinct = distinctGroup(rest[0], sel.rawSort)
				}
			}
		}
	}
	return sel, rest, nil
}

// distinctGroup returns the path f when st is {$group: {_id: "$f", …}}
// with f the sort's first field and every other field a $first
// accumulator: the $group then keeps only the first document of each
// value of f, which lets the planner read one index entry per value
// (DISTINCT_SCAN). The $group still runs, over those documents alone, so
// its results are the same. "" otherwise.
func distinctGroup(st, sort bsoncore.Document) string {
	g, ok := stageArg(st, "$group")
	if !ok {
		return ""
	}
	first, err := sort.IndexErr(0)
	if err != nil {
		return ""
	}
	elems, err := g.Elements()
	if err != nil {
		return ""
	}
	path := ""
	for _, el := range elems {
		if el.Key() == "_id" {
			s, ok := el.Value().StringValueOK()
			if !ok || len(s) < 2 || s[0] != '$' || s[1] == '$' || s[1:] != first.Key() {
				return ""
			}
			path = s[1:]
			continue
		}
		acc, ok := el.Value().DocumentOK()
		if !ok {
			return ""
		}
		ops, err := acc.Elements()
		if err != nil || len(ops) != 1 || ops[0].Key() != "$first" {
			return ""
		}
	}
	return path
}

// stageArg returns the document argument of a one-field stage {name: arg}.
func stageArg(st bsoncore.Document, name string) (bsoncore.Document, bool) {
	elems, err := st.Elements()
	if err != nil || len(elems) != 1 || elems[0].Key() != name {
		return nil, false
	}
	return elems[0].Value().DocumentOK()
}

// simpleSort reports a sort of plain directions (no $meta).
func simpleSort(d bsoncore.Document) bool {
	elems, err := d.Elements()
	if err != nil || len(elems) == 0 {
		return false
	}
	for _, el := range elems {
		n, ok := numberAsInt(el.Value())
		if !ok || (n != 1 && n != -1) {
			return false
		}
	}
	return true
}

func rawStages(stages []bsoncore.Document) bson.A {
	out := bson.A{}
	for _, st := range stages {
		out = append(out, bson.Raw(st))
	}
	return out
}
