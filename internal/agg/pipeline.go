package agg

import (
	"context"
	"github.com/cairndb/cairn/internal/collation"
	"sort"
	"time"

	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Source produces documents one at a time. Next returns nil (and a nil
// error) at the end; a document it returns is valid until the next call.
// It is the one document iterator above the engine: a pipeline reads one
// and returns one, a plan (planner.Exec) is one, and a server-side cursor
// (commands.Cursor) serves one.
type Source interface {
	Next() (bsoncore.Document, error)
	Close() error
}

// Catalog gives stages that read other collections ($lookup, $unionWith)
// their documents. The execution layer (internal/exec) implements it over
// its plans.
type Catalog interface {
	// Scan returns every document of db.coll; a collection that does not
	// exist is empty, not an error (MongoDB's behaviour for both stages).
	// The scan runs under ctx, the pipeline's.
	Scan(ctx context.Context, db, coll string) (Source, error)
}

// Options are the aggregate command's settings that change how a pipeline
// parses and runs.
type Options struct {
	// AllowDiskUse lets blocking stages spill to temporary files.
	AllowDiskUse bool
	// MaxMemory is the budget of each blocking stage in bytes; 0 means
	// 100 MB (MongoDB's internalQueryMaxBlockingSortMemoryUsageBytes and
	// internalDocumentSourceGroupMaxMemoryBytes).
	MaxMemory int64
	// Now is $$NOW; the zero time means the time Parse was called.
	Now time.Time
	// Vars are the command's let variables, by name without "$$".
	Vars map[string]bsoncore.Value
	// DB is the database that $lookup and $unionWith read from.
	DB string
	// Catalog reads other collections; nil refuses $lookup and $unionWith
	// at run time.
	Catalog Catalog
	// TempDir is where spilled sort runs go ("" is os.TempDir()).
	TempDir string
	// Seed seeds $sample's random choices; 0 picks a random seed.
	Seed uint64
	// Stats serves $collStats, $indexStats and $currentOp; nil refuses
	// them at run time.
	Stats Stats
	// NeedsMerge marks a shard's part of a split pipeline (Split): a
	// $group ending it emits partial states for the merger's $group
	// ($doingMerge), as MongoDB's needsMerge does.
	NeedsMerge bool
	// Collation compares the pipeline's strings (nil: simple); see
	// collation.go for where it applies and what it refuses.
	Collation *collation.Collator
}

// DefaultMaxMemory is the memory budget of a blocking stage.
const DefaultMaxMemory = query.DefaultSortMemory

// Pipeline is a parsed aggregation pipeline, immutable and safe for
// concurrent Runs.
type Pipeline struct {
	stages  []stage
	opts    Options
	vars    map[string]bsoncore.Value // Options.Vars plus NOW
	leading bsoncore.Document
}

// stage is one parsed pipeline stage.
type stage interface {
	// open returns the stage's output over in. in is nil only for a
	// stage that generates documents ($documents) when the pipeline has
	// no input.
	open(rc *runContext, in Source) (Source, error)
}

// parseContext is what stage parsers see.
type parseContext struct {
	opts  *Options
	scope *expr.Scope
	// index and count locate the stage in its pipeline.
	index, count int
	// inFacet, inLookup and inUnionWith say the pipeline is a
	// sub-pipeline of that stage.
	inFacet, inLookup, inUnionWith bool
}

// stageParser parses a stage's argument.
type stageParser func(arg bsoncore.Value, pc *parseContext) (stage, error)

// stages is the stage registry; stage_*.go files fill it in init.
var stages = map[string]stageParser{}

func registerStage(name string, p stageParser) { stages[name] = p }

// StageNames lists the registered stages, sorted.
func StageNames() []string {
	names := make([]string, 0, len(stages))
	for n := range stages {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// KnownStage returns nil for a stage name Cairn has and otherwise
// MongoDB's 40324, for commands that check a pipeline's stage names before
// running anything (an update pipeline's, which MongoDB checks when it
// parses the command).
func KnownStage(name string) error {
	if _, ok := stages[name]; !ok {
		return errorf(codeUnknownStage, "Unrecognized pipeline stage name: '%s'", name)
	}
	return nil
}

// Parse parses a pipeline. Errors carry MongoDB's codes: 40323 for a stage
// document without exactly one field, 40324 for an unknown stage, 40601
// for $out or $merge before the end, and each stage's own codes. The
// Pipeline refers to the bytes of the stage documents (and of
// Options.Vars), which must stay unchanged while it is in use.
func Parse(pipeline []bsoncore.Document, opts Options) (*Pipeline, error) {
	if opts.MaxMemory <= 0 {
		opts.MaxMemory = DefaultMaxMemory
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	vars := make(map[string]bsoncore.Value, len(opts.Vars)+1)
	names := make([]string, 0, len(opts.Vars)+1)
	for k, v := range opts.Vars {
		vars[k] = v
		names = append(names, k)
	}
	vars["NOW"] = expr.Date(opts.Now.UnixMilli())
	names = append(names, "NOW")
	if err := checkCollation(pipeline, &opts); err != nil {
		return nil, err
	}
	pc := &parseContext{opts: &opts, scope: expr.NewScope(nil, names...)}
	ss, err := parseStages(pipeline, pc)
	if err != nil {
		return nil, err
	}
	if opts.NeedsMerge && len(ss) > 0 {
		if g, ok := ss[len(ss)-1].(*groupStage); ok {
			g.partial = true
		}
	}
	p := &Pipeline{stages: ss, opts: opts, vars: vars}
	if len(ss) > 0 {
		if m, ok := ss[0].(*matchStage); ok {
			p.leading = m.filter
		}
	}
	return p, nil
}

// parseStages parses a (sub-)pipeline in the scope and position flags of
// pc, then applies the rewrites that do not change results ($sort+$limit
// into a top-k sort).
func parseStages(pipeline []bsoncore.Document, parent *parseContext) ([]stage, error) {
	out := make([]stage, 0, len(pipeline))
	for i, d := range pipeline {
		pc := *parent
		pc.index, pc.count = i, len(pipeline)
		name, arg, err := stageNameArg(d)
		if err != nil {
			return nil, err
		}
		p, ok := stages[name]
		if !ok {
			return nil, errorf(codeUnknownStage, "Unrecognized pipeline stage name: '%s'", name)
		}
		s, err := p(arg, &pc)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	for i := 0; i+1 < len(out); i++ {
		if s, ok := out[i].(*sortStage); ok {
			if l, ok := out[i+1].(*limitStage); ok && (s.limit == 0 || l.n < s.limit) {
				s.limit = l.n
			}
		}
	}
	return out, nil
}

// stageNameArg splits {$name: arg}.
func stageNameArg(d bsoncore.Document) (string, bsoncore.Value, error) {
	if err := d.Validate(); err != nil {
		return "", bsoncore.Value{}, mongoerr.New(mongoerr.FailedToParse, "pipeline stage is not a valid BSON document: %v", err)
	}
	elems, _ := d.Elements()
	if len(elems) != 1 {
		return "", bsoncore.Value{}, errorf(codeStageOneField, "A pipeline stage specification object must contain exactly one field.")
	}
	return elems[0].Key(), elems[0].Value(), nil
}

// LeadingMatch is the filter of the pipeline's first stage when it is a
// $match, for the caller to push into its scan or index choice; nil
// otherwise. Run still applies it (filtering twice is harmless); see
// WithoutLeadingMatch to avoid that.
func (p *Pipeline) LeadingMatch() bsoncore.Document { return p.leading }

// WithoutLeadingMatch returns the pipeline minus its leading $match, for a
// caller whose input already satisfies LeadingMatch's filter. It returns p
// itself when there is no leading $match.
func (p *Pipeline) WithoutLeadingMatch() *Pipeline {
	if p.leading == nil {
		return p
	}
	q := *p
	q.stages = p.stages[1:]
	q.leading = nil
	return &q
}

// Run streams input through the pipeline. input may be nil for a
// collection-less pipeline (one starting with $documents). Closing the
// returned Source closes input. The run ends with opctx.Err(ctx) once ctx
// ends: every stage's input is checked every few hundred documents, and
// the collections $lookup and $unionWith read are read under ctx.
func (p *Pipeline) Run(ctx context.Context, input Source) (Source, error) {
	rc := &runContext{ctx: ctx, opts: &p.opts, vars: p.vars}
	return runStages(rc, p.stages, input)
}

func runStages(rc *runContext, ss []stage, input Source) (Source, error) {
	src := input
	if src == nil {
		src = emptySource{}
	}
	for _, s := range ss {
		next, err := s.open(rc, checked(rc, src))
		if err != nil {
			src.Close()
			return nil, err
		}
		src = next
	}
	return src, nil
}

// runContext is one run's view of the options and variables.
type runContext struct {
	// ctx is the run's operation; nil only for a pipeline run outside a
	// command ($merge's whenMatched, per document), which is never checked.
	ctx  context.Context
	opts *Options
	vars map[string]bsoncore.Value
}

// exprContext returns a fresh expression context with the run's variables.
func (rc *runContext) exprContext() *expr.Context {
	ctx := expr.NewContext(emptyDoc)
	if rc.ctx != nil {
		ctx.SetOperation(rc.ctx) // $map, $filter, $reduce over long arrays stop with the run
	}
	ctx.SetCollator(rc.opts.collator())
	for k, v := range rc.vars {
		ctx.SetVar(k, v)
	}
	return ctx
}

// withVars returns a run context with extra variables (a $lookup's let).
func (rc *runContext) withVars(extra map[string]bsoncore.Value) *runContext {
	vars := make(map[string]bsoncore.Value, len(rc.vars)+len(extra))
	for k, v := range rc.vars {
		vars[k] = v
	}
	for k, v := range extra {
		vars[k] = v
	}
	return &runContext{ctx: rc.ctx, opts: rc.opts, vars: vars}
}

// memoryError is the error of a blocking stage over its budget.
func (rc *runContext) memoryError(stageName string) error {
	if rc.opts.AllowDiskUse {
		return mongoerr.New(mongoerr.QueryExceededMemory,
			"Exceeded memory limit for %s of %d bytes, and spilling it to disk is not implemented yet.", stageName, rc.opts.MaxMemory)
	}
	return mongoerr.New(mongoerr.QueryExceededMemory,
		"Exceeded memory limit for %s, but didn't allow external sort. Pass allowDiskUse:true to opt in.", stageName)
}
