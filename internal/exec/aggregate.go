package exec

import (
	"bytes"
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/collation"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/planner"
	"github.com/cairndb/cairn/internal/query"
	"github.com/cairndb/cairn/internal/timeseries"
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
	// (see Selection.AsOf). Other collections the pipeline reads ($lookup,
	// $unionWith) are read at it too on a replica set member (whose
	// snapshot history serves plain collections), and as they are now on a
	// standalone (which serves only versioned collections at a time).
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
	if r := e.resolveView(a); r.NS != a.NS || len(r.Stages) != len(a.Stages) {
		if a.AsOf != 0 {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "readConcern atClusterTime reads versioned collections; a view cannot be read at a cluster time")
		}
		a = r
	}
	a.Opts.Catalog = aggCatalog{e: e}
	if e.eng.SnapshotHistoryAllowed() {
		a.Opts.Catalog = aggCatalog{e: e, at: a.AsOf}
	}
	var gnSel Selection
	var gn *geoNearSpec // a leading $geoNear (geonear.go)
	if !a.Collectionless {
		sel, spec, rest, ok, err := e.splitGeoNear(a.NS, a.Stages)
		if err != nil {
			return nil, err
		}
		if ok {
			gnSel, gn, a.Stages = sel, spec, rest
		}
	}
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
	if a.AsOf != 0 && (a.Collectionless || gn != nil) {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "readConcern atClusterTime reads a versioned collection's documents; this pipeline reads no collection or starts with $geoNear, which reads an index of the latest documents")
	}
	if gn != nil {
		if a.Opts.Collation != nil {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "$geoNear with a non-simple collation is not supported by Cairn yet")
		}
		gnSel.SortMemory, gnSel.AllowDiskUse, gnSel.Hint = a.Opts.MaxMemory, a.Opts.AllowDiskUse, a.Hint
		if input, err = e.openGeoNear(ctx, gnSel, gn, Run); err != nil {
			return nil, err
		}
	} else if !a.Collectionless && startsWithVersions(a.Stages) {
		if a.AsOf != 0 {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "$versions reads every version; it takes no readConcern atClusterTime (match on validFrom and validTo instead)")
		}
		// The history is the input; $versions passes it through.
		if input, err = e.openVersions(ctx, a.NS, a.Stages); err != nil {
			return nil, err
		}
	} else if !a.Collectionless {
		sel, rest, err := PushDown(a.NS, a.Stages, a.Opts.Collation)
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
	if readsTextScore(a.Stages) {
		out = &stripTextScore{in: out}
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
	a = e.resolveView(a)
	sel, _, rest, ok, err := e.splitGeoNear(a.NS, a.Stages)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		sel, rest, err = PushDown(a.NS, a.Stages, a.Opts.Collation)
	}
	if err != nil {
		return nil, nil, err
	}
	sel.SortMemory, sel.AllowDiskUse, sel.Hint = a.Opts.MaxMemory, a.Opts.AllowDiskUse, a.Hint
	ex, err := e.ExplainRun(ctx, sel, execute, nil)
	return ex, rest, err
}

// PushDown splits a pipeline into the selection the collection read does
// (a leading $match without variables, a $sort right after it, and a
// $limit after that) and the stages that remain; the read compares strings
// by coll (the pipeline's collation, nil: simple).
func PushDown(ns engine.Namespace, stages []bsoncore.Document, coll *collation.Collator) (Selection, []bsoncore.Document, error) {
	var matches []bsoncore.Document
	rest := stages
	for len(rest) > 0 {
		m, ok := stageArg(rest[0], "$match")
		if !ok || strings.Contains(string(m), "$$") {
			break
		}
		matches, rest = append(matches, m), rest[1:]
	}
	match := andOf(matches)
	var opts query.Options
	if coll != nil {
		opts.Collation = coll
	}
	sel, err := NewSelection(ns, match, opts)
	if err != nil {
		return sel, nil, err
	}
	sel.TextScore = sel.Filter.HasText() && readsTextScore(rest)
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
type aggCatalog struct {
	e  *Env
	at hlc.Timestamp // non-zero: read them at this cluster time (Aggregate.AsOf)
}

var _ agg.IndexCatalog = aggCatalog{}

func (c aggCatalog) Scan(ctx context.Context, db, coll string) (agg.Source, error) {
	if c.e.eng.Catalog().View(db, coll) != nil {
		return c.e.Aggregate(ctx, Aggregate{NS: engine.Namespace{DB: db, Coll: coll}, Opts: agg.Options{DB: db}, AsOf: c.at})
	}
	sel, err := NewSelection(engine.Namespace{DB: db, Coll: coll}, nil, query.Options{})
	if err != nil {
		return nil, err
	}
	sel.AsOf = c.at
	return c.e.Open(ctx, sel, Run)
}

// FindIn serves $lookup's per-document equality match through an index on
// the foreign field (agg.IndexCatalog): the filter {path: {$in: vals}} goes
// to the planner like a find's, and only an index plan is taken; a
// collection scan per input document would be slower than $lookup's own
// read-once fallback, so it reports ok false instead. Under a collation the
// planner takes only an index of that collation for strings.
func (c aggCatalog) FindIn(ctx context.Context, db, coll, path string, vals []bsoncore.Value, by *collation.Collator) (agg.Source, bool, error) {
	if c.e.eng.Catalog().View(db, coll) != nil {
		return nil, false, nil // a view has no index: $lookup reads it once (Scan)
	}
	in := bsoncore.NewArrayBuilder()
	for _, v := range vals {
		in.AppendValue(v)
	}
	filter := bsoncore.NewDocumentBuilder().
		AppendDocument(path, bsoncore.NewDocumentBuilder().AppendArray("$in", in.Build()).Build()).
		Build()
	var opts query.Options
	if by != nil {
		opts.Collation = by
	}
	sel, err := NewSelection(engine.Namespace{DB: db, Coll: coll}, filter, opts)
	if err != nil {
		return nil, false, err
	}
	sel.AsOf = c.at
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

// resolveView rewrites an aggregation over a view into one over the
// collection the view reads: the view's pipeline (views on views
// innermost first) ahead of a's stages. Other aggregations pass unchanged.
func (e *Env) resolveView(a Aggregate) Aggregate {
	if a.Collectionless {
		return a
	}
	coll, stages, _, isView := e.eng.Catalog().Resolve(a.NS.DB, a.NS.Coll)
	if !isView {
		return a
	}
	if len(a.Stages) > 0 && e.eng.Catalog().View(a.NS.DB, a.NS.Coll).IsTimeseries() {
		if _, err := a.Stages[0].LookupErr("$collStats"); err == nil {
			a.NS.Coll = coll // a time series collection's $collStats reports on its buckets
			return a
		}
	}
	a.NS.Coll = coll
	a.Stages = timeseries.PushDown(append(stages, a.Stages...))
	return a
}

// andOf is one filter for consecutive $match stages (a view's and the
// query's on it), as MongoDB coalesces them: the filter itself for one,
// {$and: [...]} for several, nil for none.
func andOf(filters []bsoncore.Document) bsoncore.Document {
	switch len(filters) {
	case 0:
		return nil
	case 1:
		return filters[0]
	}
	arr := bsoncore.NewArrayBuilder()
	for _, f := range filters {
		arr.AppendDocument(f)
	}
	return bsoncore.NewDocumentBuilder().AppendArray("$and", arr.Build()).Build()
}

// CheckViewPipeline parses a view's pipeline as its reads will run it and
// refuses $out and $merge, which a view may not hold
// (OptionNotSupportedOnView).
func CheckViewPipeline(db string, stages []bsoncore.Document) error {
	p, err := agg.Parse(stages, agg.Options{DB: db})
	if err != nil {
		return err
	}
	if p.Output() != nil {
		return mongoerr.New(mongoerr.OptionNotSupportedOnView, "$out and $merge cannot be used in a view definition")
	}
	return nil
}

// readsTextScore reports whether some stage reads {$meta: "textScore"}
// (looking at the bytes: a stage that merely names the string in a
// literal costs one needless score field, never a wrong result).
func readsTextScore(stages []bsoncore.Document) bool {
	for _, st := range stages {
		if bytes.Contains(st, []byte("$meta")) && bytes.Contains(st, []byte("textScore")) {
			return true
		}
	}
	return false
}

// stripTextScore removes the score a text plan appended (planner.Query's
// TextScore) from documents that leave the pipeline unchanged.
type stripTextScore struct {
	in  agg.Source
	buf []byte
}

func (s *stripTextScore) Next() (bsoncore.Document, error) {
	d, err := s.in.Next()
	if d == nil || err != nil {
		return d, err
	}
	if !bytes.Contains(d, []byte(query.TextScoreField)) {
		return d, nil
	}
	s.buf, _, _ = query.StripTextScore(s.buf[:0], d)
	return s.buf, nil
}

func (s *stripTextScore) Close() error { return s.in.Close() }
