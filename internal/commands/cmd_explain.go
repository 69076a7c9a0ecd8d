package commands

import (
	"context"
	"github.com/cairndb/cairn/internal/bsonx"
	"math"
	"os"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// cmdExplain explains find and count in MongoDB's shape: the winning plan as
// a stage tree (COLLSCAN, IDHACK, FETCH over IXSCAN, SORT, SKIP, LIMIT,
// PROJECTION_DEFAULT, COUNT), and, unless the verbosity is queryPlanner,
// runs it and reports true counts per stage. Other commands: 115 for now.
func cmdExplain(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
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
	var sp findSpec
	switch innerReq.Name {
	case "find":
		sp, err = parseFind(s, innerReq)
	case "count":
		sp, err = parseCountSpec(s, innerReq)
	default:
		return nil, notYet("explain of " + innerReq.Name)
	}
	if err != nil {
		return nil, err
	}
	ex, err := runExplained(s.Env.Engine, sp, innerReq.Name == "count", verbosity != "queryPlanner")
	if err != nil {
		return nil, err
	}
	r := NewReply(dst).String("explainVersion", "1")
	r.Doc("queryPlanner", NewReply(nil).String("namespace", sp.ns.String()).Bool("indexFilterSet", false).
		Doc("parsedQuery", sp.rawFilter()).Bool("maxIndexedOrSolutionsReached", false).
		Bool("maxIndexedAndSolutionsReached", false).Bool("maxScansToExplodeReached", false).
		Doc("winningPlan", ex.tree(false)).DocArray("rejectedPlans", nil).End())
	if verbosity != "queryPlanner" {
		stats := NewReply(nil).Bool("executionSuccess", true).Count("nReturned", ex.top().n).
			Count("executionTimeMillis", ex.millis).Count("totalKeysExamined", ex.keys).Count("totalDocsExamined", ex.docs).
			Doc("executionStages", ex.tree(true))
		if verbosity == "allPlansExecution" {
			stats.DocArray("allPlansExecution", nil)
		}
		r.Doc("executionStats", stats.End())
	}
	r.Doc("command", inner)
	host, _ := os.Hostname()
	r.Doc("serverInfo", doc("host", host, "port", int32(s.Env.Config.Port), "version", MongoVersion, "gitVersion", "cairn"))
	return r.Finish(), nil
}

// parseCountSpec reads a count command as a selection.
func parseCountSpec(s *Session, req *Request) (findSpec, error) {
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
	if sp.limit < 0 {
		sp.limit = -sp.limit
	}
	if v, ok := req.Arg("hint"); ok {
		if sp.hint, err = resolveHint(s, sp.ns, v); err != nil {
			return sp, err
		}
	}
	return sp, nil
}

// explained is a plan with its stages, counted while it ran.
type explained struct {
	eng    *engine.Engine
	sp     findSpec
	info   baseInfo
	stages []*stageStats // innermost first
	keys   int64
	docs   int64
	millis int64
}

// stageStats describes one stage and counts what it returned.
type stageStats struct {
	name   string
	fields func(r *Reply)
	src    Source
	n      int64
}

func (st *stageStats) Next() (bsoncore.Document, error) {
	d, err := st.src.Next()
	if d != nil {
		st.n++
	}
	return d, err
}

func (st *stageStats) Close() error { return st.src.Close() }

func (ex *explained) top() *stageStats { return ex.stages[len(ex.stages)-1] }

// push wraps src as the next stage.
func (ex *explained) push(name string, src Source, fields func(*Reply)) Source {
	st := &stageStats{name: name, src: src, fields: fields}
	ex.stages = append(ex.stages, st)
	return st
}

// runExplained builds the find's chain stage by stage and, when execute is
// set, drains it, counting keys and documents examined.
func runExplained(eng *engine.Engine, sp findSpec, count, execute bool) (*explained, error) {
	ex := &explained{eng: eng, sp: sp}
	start := time.Now()
	base, info, err := sp.base(eng)
	if err != nil {
		return nil, err
	}
	ex.info = info
	src := ex.pushBase(base)
	if sp.sort != nil {
		sorted, err := sortSource(src, sp)
		if err != nil {
			return nil, err
		}
		src = ex.push("SORT", sorted, func(r *Reply) {
			r.Doc("sortPattern", sp.rawSort).Int64("memLimit", sp.sortMemory).String("type", "simple")
		})
	}
	if sp.skip > 0 {
		src = ex.push("SKIP", limitSource(src, sp.skip, 0), func(r *Reply) { r.Int64("skipAmount", sp.skip) })
	}
	if sp.limit > 0 {
		src = ex.push("LIMIT", limitSource(src, 0, sp.limit), func(r *Reply) { r.Int64("limitAmount", sp.limit) })
	}
	if sp.proj != nil {
		src = ex.push("PROJECTION_DEFAULT", &projectSource{src: src, proj: sp.proj, filter: sp.filter, positional: sp.positional},
			func(r *Reply) { r.Doc("transformBy", sp.rawProj) })
	}
	if count {
		src = ex.push("COUNT", src, nil)
	}
	defer src.Close()
	if execute {
		for {
			d, err := src.Next()
			if err != nil {
				return nil, err
			}
			if d == nil {
				break
			}
		}
		ex.countExamined(base)
	}
	ex.millis = time.Since(start).Milliseconds()
	return ex, nil
}

// pushBase adds the stages that read the collection.
func (ex *explained) pushBase(base Source) Source {
	switch ex.info.kind {
	case stageIDHack:
		return ex.push("IDHACK", base, nil)
	case stageIXScan:
		ex.stages = append(ex.stages, &stageStats{name: "IXSCAN", fields: ex.ixscanFields})
		return ex.push("FETCH", base, func(r *Reply) { r.Doc("filter", ex.sp.rawFilter()) })
	}
	return ex.push("COLLSCAN", base, func(r *Reply) {
		r.Doc("filter", ex.sp.rawFilter()).String("direction", "forward")
	})
}

// countExamined reads the base source's own counters.
func (ex *explained) countExamined(base Source) {
	switch b := base.(type) {
	case *scanSource:
		ex.docs = int64(b.n)
	case *indexSource:
		ex.keys = int64(b.scan.KeysExamined())
		ex.docs = int64(b.n)
		ex.stages[0].n = int64(b.n) // IXSCAN returns one record per document fetched
	case *sliceSource:
		ex.keys, ex.docs = ex.stages[0].n, ex.stages[0].n
	}
}

// ixscanFields describes the index scan as MongoDB's IXSCAN stage does.
func (ex *explained) ixscanFields(r *Reply) {
	_, specs, _ := ex.eng.Indexes(ex.sp.ns)
	names, _, _ := ex.eng.Indexes(ex.sp.ns)
	for i, ix := range names {
		if ix.Name != ex.info.plan.Index {
			continue
		}
		spec := specs[i]
		r.Doc("keyPattern", spec.Key).String("indexName", ix.Name).Bool("isMultiKey", ix.Multikey)
		r.Bool("isUnique", spec.Unique).Bool("isSparse", spec.Sparse).Bool("isPartial", spec.PartialFilterExpression != nil)
		r.Int32("indexVersion", 2).String("direction", "forward")
		bounds := NewReply(nil)
		for j, f := range spec.KeyPattern {
			interval := "[MinKey, MaxKey]"
			if j == 0 {
				interval = "[" + boundString(ex.info.plan.Lower, "MinKey") + ", " + boundString(ex.info.plan.Upper, "MaxKey") + "]"
			}
			bounds.StringArray(f.Path, []string{interval})
		}
		r.Doc("indexBounds", bounds.End())
	}
}

// boundString shows one encoded bound as MongoDB prints index bounds.
func boundString(key []byte, unbounded string) string {
	if key == nil {
		return unbounded
	}
	v, _, err := keystring.Decode(key)
	if err != nil {
		return "?"
	}
	switch v.Type {
	case bsoncore.TypeString:
		return strconv.Quote(v.StringValue())
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble:
		f, _ := bsonx.AsFloat64(v)
		if math.IsInf(f, 0) {
			return strconv.FormatFloat(f, 'f', -1, 64)
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	case bsoncore.TypeNull:
		return "null"
	case bsoncore.TypeUndefined:
		return "undefined"
	}
	return v.String()
}

// tree renders the stages, outermost first, as nested inputStage documents.
func (ex *explained) tree(withStats bool) bsoncore.Document {
	var inner bsoncore.Document
	for i, st := range ex.stages {
		r := NewReply(nil).String("stage", st.name)
		if st.fields != nil {
			st.fields(r)
		}
		if withStats {
			r.Count("nReturned", st.n)
			switch {
			case i == 0 && st.name == "IXSCAN":
				r.Count("keysExamined", ex.keys)
			case i == 0 && st.name == "COLLSCAN":
				r.Count("docsExamined", ex.docs)
			case st.name == "FETCH":
				r.Count("docsExamined", ex.docs)
			case st.name == "IDHACK":
				r.Count("keysExamined", ex.keys).Count("docsExamined", ex.docs)
			}
		}
		if inner != nil {
			r.Doc("inputStage", inner)
		}
		inner = r.End()
	}
	return inner
}
