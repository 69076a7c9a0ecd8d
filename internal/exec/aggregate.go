package exec

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/planner"
	"github.com/cairndb/cairn/internal/query"
)

// Aggregate is a parsed aggregate command.
type Aggregate struct {
	// NS is the collection read; with Collectionless only its DB counts
	// ({aggregate: 1}, for stages such as $documents).
	NS             engine.Namespace
	Collectionless bool
	Stages         []bsoncore.Document // owned copies
	// Opts are the pipeline's settings; Aggregate sets Opts.Catalog (the
	// stages that read other collections read through the Env).
	Opts agg.Options
	// Bypass writes $out's and $merge's documents without checking the
	// target's validator (bypassDocumentValidation).
	Bypass bool
	// Hint forces the collection read's plan (an index name or key pattern,
	// {$natural: ±1}; owned); Type 0 lets the planner choose.
	Hint bsoncore.Value
	// AsOf, non-zero, reads the collection as it was at that cluster time
	// (a versioned collection; see Selection.AsOf). Other collections the
	// pipeline reads ($lookup, $unionWith) are read as they are now.
	AsOf hlc.Timestamp
}

// Aggregate runs a's pipeline. Without $out or $merge it returns the
// results, one document at a time; with one it writes them to the target
// and returns a nil Source (the reply is an empty batch and no cursor).
//
// The leading $match becomes the collection read's filter and a $sort
// after it the read's order, where the planner can use an index, unless
// the $match reads variables ($$NOW, let): those exist only inside the
// pipeline, so it stays there (see PushDown, shared with explain so that
// explain shows what runs).
//
// The pipeline runs under ctx: the collection read, every stage's input,
// the collections $lookup and $unionWith read and the expression loops end
// with opctx.Err(ctx) once it ends. A pipeline kept as a cursor's should
// run under a context that outlives the request (opctx.Bound).
func (e *Env) Aggregate(ctx context.Context, a Aggregate) (agg.Source, error) {
	a.Opts.Catalog = aggCatalog{e}
	p, err := agg.Parse(a.Stages, a.Opts)
	if err != nil {
		return nil, err
	}
	var writer *outputWriter // $out or $merge (output.go)
	if o := p.Output(); o != nil {
		if writer, err = prepareOutput(e.eng, o); err != nil {
			return nil, err
		}
		writer.bypass = a.Bypass
		p = p.WithoutOutput()
	}
	var input agg.Source
	if a.AsOf != 0 && a.Collectionless {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "readConcern atClusterTime needs a collection to read")
	}
	if !a.Collectionless && startsWithVersions(a.Stages) {
		if a.AsOf != 0 {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "$versions reads every version; it takes no readConcern atClusterTime (match on validFrom and validTo instead)")
		}
		// The history is the input; $versions passes it through.
		if input, err = e.openVersions(ctx, a.NS, a.Stages); err != nil {
			return nil, err
		}
	} else if !a.Collectionless {
		sel, rest, err := PushDown(a.NS, a.Stages)
		if err != nil {
			return nil, err
		}
		if len(rest) < len(a.Stages) {
			if p, err = agg.Parse(rest, a.Opts); err != nil {
				return nil, err
			}
			if writer != nil {
				p = p.WithoutOutput() // the writer carries out $out/$merge
			}
		}
		sel.SortMemory, sel.AllowDiskUse, sel.Hint, sel.AsOf = a.Opts.MaxMemory, a.Opts.AllowDiskUse, a.Hint, a.AsOf
		if input, err = e.Open(ctx, sel, Run); err != nil {
			return nil, err
		}
	}
	out, err := p.Run(ctx, input)
	if err != nil {
		if input != nil {
			_ = input.Close()
		}
		return nil, err
	}
	if writer != nil {
		return nil, writer.write(out)
	}
	return out, nil
}

// ExplainAggregate plans a's pushed-down collection read for explain (and,
// when execute, runs it) and returns it with the stages that remain above
// it. A collection-less pipeline has no read: the plan is nil and every
// stage remains.
func (e *Env) ExplainAggregate(ctx context.Context, a Aggregate, execute bool) (*planner.Exec, []bsoncore.Document, error) {
	if a.Collectionless {
		return nil, a.Stages, nil
	}
	sel, rest, err := PushDown(a.NS, a.Stages)
	if err != nil {
		return nil, nil, err
	}
	sel.SortMemory, sel.AllowDiskUse, sel.Hint = a.Opts.MaxMemory, a.Opts.AllowDiskUse, a.Hint
	ex, err := e.ExplainRun(ctx, sel, execute, nil)
	return ex, rest, err
}

// PushDown splits a pipeline into the selection the collection read does
// (a leading $match without variables, a $sort right after it, and a
// $limit after that) and the stages that remain.
func PushDown(ns engine.Namespace, stages []bsoncore.Document) (Selection, []bsoncore.Document, error) {
	var match bsoncore.Document
	rest := stages
	if len(rest) > 0 {
		if m, ok := stageArg(rest[0], "$match"); ok && !strings.Contains(string(m), "$$") {
			match, rest = m, rest[1:]
		}
	}
	sel, err := NewSelection(ns, match, query.Options{})
	if err != nil {
		return sel, nil, err
	}
	if len(rest) > 0 {
		if srt, ok := stageArg(rest[0], "$sort"); ok && simpleSort(srt) {
			if err := sel.SetSort(srt); err == nil {
				rest = rest[1:]
				// A $limit after the $sort makes it a top-k sort.
				if len(rest) > 0 {
					if el, err := rest[0].IndexErr(0); err == nil && el.Key() == "$limit" {
						if n, ok := bsonx.AsInt64(el.Value()); ok && n > 0 {
							sel.Limit, rest = n, rest[1:]
						}
					}
				}
				if sel.Limit == 0 && len(rest) > 0 {
					sel.Distinct = distinctGroup(rest[0], sel.RawSort)
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
		n, ok := bsonx.AsInt64(el.Value())
		if !ok || (n != 1 && n != -1) {
			return false
		}
	}
	return true
}

// aggCatalog lets $lookup and $unionWith read other collections through the
// Env's plans.
type aggCatalog struct{ e *Env }

var _ agg.IndexCatalog = aggCatalog{}

func (c aggCatalog) Scan(ctx context.Context, db, coll string) (agg.Source, error) {
	sel, err := NewSelection(engine.Namespace{DB: db, Coll: coll}, nil, query.Options{})
	if err != nil {
		return nil, err
	}
	return c.e.Open(ctx, sel, Run)
}

// FindIn serves $lookup's per-document equality match through an index on
// the foreign field (agg.IndexCatalog): the filter {path: {$in: vals}} goes
// to the planner like a find's, and only an index plan is taken; a
// collection scan per input document would be slower than $lookup's own
// read-once fallback, so it reports ok false instead.
func (c aggCatalog) FindIn(ctx context.Context, db, coll, path string, vals []bsoncore.Value) (agg.Source, bool, error) {
	in := bsoncore.NewArrayBuilder()
	for _, v := range vals {
		in.AppendValue(v)
	}
	filter := bsoncore.NewDocumentBuilder().
		AppendDocument(path, bsoncore.NewDocumentBuilder().AppendArray("$in", in.Build()).Build()).
		Build()
	sel, err := NewSelection(engine.Namespace{DB: db, Coll: coll}, filter, query.Options{})
	if err != nil {
		return nil, false, err
	}
	ex, err := c.e.Open(ctx, sel, Run)
	if err != nil {
		return nil, false, err
	}
	if ex.ScansCollection() {
		_ = ex.Close()
		return nil, false, nil
	}
	return ex, true, nil
}
