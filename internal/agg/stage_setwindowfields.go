package agg

import (
	"sort"
	"strconv"
	"strings"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func init() { registerStage("$setWindowFields", parseSetWindowFields) }

// setWindowFieldsStage is $setWindowFields: documents are partitioned by
// partitionBy's value (missing as null; an array is an error), each
// partition ordered by sortBy, and every output field is set (as $addFields
// would, dotted paths included) to its window function's value over the
// document's window (window_bounds.go, window_funcs.go). Like MongoDB,
// which sorts by {partitionBy, sortBy} first, the stage emits partitions
// in partition-value order, each in sortBy order (ties and an absent
// sortBy keep input order). It blocks, holding its input within the
// memory budget or, with allowDiskUse, sorting it through a spilling
// keyedSorter (spill_sort.go) and holding one partition at a time.
type setWindowFieldsStage struct {
	partitionBy expr.Expr
	sort        *query.Sort       // nil without sortBy
	sortBy      bsoncore.Document // as given, for the spilling sort
	sortPath    expr.Expr         // "$<field>" of a one-field sortBy
	sortDesc    bool
	sortFields  int
	outputs     []windowFn
	setter      *projection // {<output>: "$$ω<i>", …}
}

// windowVar names the variable carrying output i's value; the leading
// non-ASCII letter keeps it apart from user variables.
func windowVar(i int) string { return "ω" + strconv.Itoa(i) }

func parseSetWindowFields(arg bsoncore.Value, pc *parseContext) (stage, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.FailedToParse, "the $setWindowFields stage specification must be an object, found %s", typeName(arg))
	}
	s := &setWindowFieldsStage{}
	var partitionBy, sortBy, output bsoncore.Value
	for _, f := range fieldsOf(arg) {
		switch f.Name {
		case "partitionBy":
			partitionBy = f.Value
		case "sortBy":
			sortBy = f.Value
		case "output":
			output = f.Value
		default:
			return nil, errorf(codeLookupUnknownField, "BSON field '$setWindowFields.%s' is an unknown field.", f.Name)
		}
	}
	if output.Type == 0 {
		return nil, errorf(codeIDLMissingField, "BSON field '$setWindowFields.output' is missing but a required field")
	}
	if output.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$setWindowFields.output' is the wrong type '%s', expected type 'object'", typeName(output))
	}
	if partitionBy.Type != 0 {
		if partitionBy.Type == bsoncore.TypeArray {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "An expression used to partition cannot evaluate to value of type array")
		}
		e, err := expr.ParseIn(partitionBy, pc.scope)
		if err != nil {
			return nil, err
		}
		s.partitionBy = e
	}
	if sortBy.Type != 0 {
		if sortBy.Type != bsoncore.TypeEmbeddedDocument {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$setWindowFields.sortBy' is the wrong type '%s', expected type 'object'", typeName(sortBy))
		}
		srt, err := query.ParseSort(sortBy.Data)
		if err != nil {
			return nil, err
		}
		if pc.opts.Collation != nil {
			srt = srt.WithCollation(pc.opts.Collation) // sortBy and rank ties compare strings by the pipeline's collation
		}
		s.sort, s.sortFields, s.sortBy = srt, srt.Len(), sortBy.Data
		if fs := fieldsOf(sortBy); len(fs) == 1 {
			if s.sortPath, err = expr.ParseIn(expr.String("$"+fs[0].Name), pc.scope); err != nil {
				return nil, err
			}
			s.sortDesc = expr.Compare(fs[0].Value, expr.Int32(0)) < 0
		}
	}
	setSpec := bsoncore.NewDocumentBuilder()
	var names []string
	for i, f := range fieldsOf(output) {
		if _, err := splitPath(f.Name); err != nil {
			return nil, err
		}
		fn, err := parseWindowFn(f.Name, f.Value, s, pc)
		if err != nil {
			return nil, err
		}
		s.outputs = append(s.outputs, fn)
		setSpec.AppendString(f.Name, "$$"+windowVar(i))
		names = append(names, windowVar(i))
	}
	if len(s.outputs) == 0 {
		return nil, mongoerr.New(mongoerr.FailedToParse, "$setWindowFields 'output' specification must have at least one field")
	}
	setter, err := parseAddFieldsSpec(docValue(setSpec.Build()), expr.NewScope(pc.scope, names...))
	if err != nil {
		return nil, err
	}
	s.setter = setter
	return s, nil
}

// partition is one partition's documents in sort order, with what window
// functions share.
type partition struct {
	docs     []bsoncore.Document
	keys     [][]bsoncore.Value // sortBy keys, nil without sortBy
	sort     *query.Sort
	sortPath expr.Expr
	desc     bool
	ctx      *expr.Context
	// rangeVals caches the sortBy values as numbers (dates in
	// milliseconds) for range windows, by unit ("" for plain numbers).
	rangeVals map[string][]float64
}

// eval evaluates e on every document.
func (p *partition) eval(e expr.Expr) ([]bsoncore.Value, error) {
	out := make([]bsoncore.Value, len(p.docs))
	if e == nil {
		return out, nil
	}
	for i, d := range p.docs {
		p.ctx.Reset(d)
		v, err := e.Eval(p.ctx)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// rangeValues are the sortBy values as numbers: numbers without a unit
// (5429413 otherwise), dates in milliseconds with one (5429513).
func (p *partition) rangeValues(unit string) ([]float64, error) {
	if v, ok := p.rangeVals[unit]; ok {
		return v, nil
	}
	vals, err := p.eval(p.sortPath)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(vals))
	for i, v := range vals {
		switch {
		case unit == "" && isNumber(v):
			out[i], _ = bsonx.AsFloat64(v)
		case unit == "" && v.Type == bsoncore.TypeDateTime:
			return nil, errorf(codeRangeDateNoUnit, "Invalid range: Expected the sortBy field to be a number, but it was date (a range over dates needs a unit)")
		case unit == "":
			return nil, errorf(codeRangeNotNumber, "Invalid range: Expected the sortBy field to be a number, but it was %s", typeName(v))
		case v.Type == bsoncore.TypeDateTime:
			out[i] = float64(v.DateTime())
		default:
			return nil, errorf(codeRangeNotDate, "Invalid range: Expected the sortBy field to be a Date, but it was %s", typeName(v))
		}
	}
	if p.rangeVals == nil {
		p.rangeVals = map[string][]float64{}
	}
	p.rangeVals[unit] = out
	return out, nil
}

func (s *setWindowFieldsStage) open(rc *runContext, in Source) (Source, error) {
	if rc.opts.AllowDiskUse {
		return s.openSpilling(rc, in)
	}
	return blockingSource(in, func() ([]bsoncore.Document, error) { return s.run(rc, in) }), nil
}

// partitionKey is d's partitionBy value: null when missing or without
// partitionBy, an error for an array.
func (s *setWindowFieldsStage) partitionKey(ctx *expr.Context, d bsoncore.Document) (bsoncore.Value, error) {
	if s.partitionBy == nil {
		return expr.Null, nil
	}
	ctx.Reset(d)
	v, err := s.partitionBy.Eval(ctx)
	if err != nil {
		return v, err
	}
	if v.Type == bsoncore.TypeArray {
		return v, mongoerr.New(mongoerr.TypeMismatch, "An expression used to partition cannot evaluate to value of type array")
	}
	if v.Type == 0 {
		return expr.Null, nil
	}
	return v, nil
}

// emit appends to out the documents of p with their output fields set;
// vals is scratch space, one slice per output.
func (s *setWindowFieldsStage) emit(rc *runContext, p *partition, vals [][]bsoncore.Value, out []bsoncore.Document) ([]bsoncore.Document, error) {
	var err error
	for k, fn := range s.outputs {
		if vals[k], err = fn.values(rc, p); err != nil {
			return nil, err
		}
	}
	ctx := p.ctx
	for i, d := range p.docs {
		ctx.Reset(d)
		for k := range s.outputs {
			ctx.SetVar(windowVar(k), vals[k][i])
		}
		nd, err := s.setter.apply(d, ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, nd)
	}
	return out, nil
}

// openSpilling is open with allowDiskUse: the input is sorted by
// {partition, sortBy} through a keyedSorter, which spills past the memory
// budget, and read back one partition at a time. A single partition must
// still fit in the budget (MongoDB would spill it too).
func (s *setWindowFieldsStage) openSpilling(rc *runContext, in Source) (Source, error) {
	ks, err := newKeyedSorter(rc, s.sortBy)
	if err != nil {
		return nil, err
	}
	ctx := rc.exprContext()
	vals := make([][]bsoncore.Value, len(s.outputs))
	var (
		next     func() (bsoncore.Value, bsoncore.Document, bool, error)
		key      bsoncore.Value
		doc      bsoncore.Document
		more     bool
		out      []bsoncore.Document
		sortDone bool
	)
	fill := func() error {
		for {
			d, err := in.Next()
			if err != nil || d == nil {
				return err
			}
			k, err := s.partitionKey(ctx, d)
			if err != nil {
				return err
			}
			if err := ks.add(k, d); err != nil {
				return err
			}
		}
	}
	// nextPartition emits the partition starting at (key, doc).
	nextPartition := func() error {
		p := &partition{sort: s.sort, sortPath: s.sortPath, desc: s.sortDesc, ctx: ctx}
		var mem int64
		for first := key; more && expr.CompareWith(key, first, rc.opts.collator()) == 0; {
			mem += int64(len(doc)) + docOverhead
			if mem > rc.opts.MaxMemory {
				return mongoerr.New(mongoerr.QueryExceededMemory,
					"Exceeded memory limit for $setWindowFields of %d bytes in one partition, and spilling a partition to disk is not implemented yet.", rc.opts.MaxMemory)
			}
			p.docs = append(p.docs, doc)
			if s.sort != nil {
				p.keys = append(p.keys, s.sort.Key(doc))
			}
			var err error
			if key, doc, more, err = next(); err != nil {
				return err
			}
		}
		var err error
		out, err = s.emit(rc, p, vals, out[:0])
		return err
	}
	return &funcSource{in: in, done: ks.close, next: func() (bsoncore.Document, error) {
		if !sortDone {
			sortDone = true
			if err := fill(); err != nil {
				return nil, err
			}
			next = ks.iter()
			var err error
			if key, doc, more, err = next(); err != nil {
				return nil, err
			}
		}
		for len(out) == 0 {
			if !more {
				return nil, nil
			}
			if err := nextPartition(); err != nil {
				return nil, err
			}
		}
		d := out[0]
		out = out[1:]
		return d, nil
	}}, nil
}

func (s *setWindowFieldsStage) run(rc *runContext, in Source) ([]bsoncore.Document, error) {
	docs, err := bufferAll(rc, in, "$setWindowFields")
	if err != nil {
		return nil, err
	}
	ctx := rc.exprContext()
	parts := make([]bsoncore.Value, len(docs))
	keys := make([][]bsoncore.Value, len(docs))
	for i, d := range docs {
		if parts[i], err = s.partitionKey(ctx, d); err != nil {
			return nil, err
		}
		if s.sort != nil {
			keys[i] = s.sort.Key(d)
		}
	}
	order := make([]int, len(docs))
	for i := range order {
		order[i] = i
	}
	coll := rc.opts.collator() // partitions group strings equal under the collation
	sort.SliceStable(order, func(a, b int) bool {
		i, j := order[a], order[b]
		if c := expr.CompareWith(parts[i], parts[j], coll); c != 0 {
			return c < 0
		}
		return s.sort != nil && s.sort.CompareKeys(keys[i], keys[j]) < 0
	})
	out := make([]bsoncore.Document, 0, len(docs))
	vals := make([][]bsoncore.Value, len(s.outputs))
	for start := 0; start < len(order); {
		end := start + 1
		for end < len(order) && expr.CompareWith(parts[order[start]], parts[order[end]], coll) == 0 {
			end++
		}
		p := &partition{sort: s.sort, sortPath: s.sortPath, desc: s.sortDesc, ctx: ctx}
		for _, i := range order[start:end] {
			p.docs = append(p.docs, docs[i])
			p.keys = append(p.keys, keys[i])
		}
		if out, err = s.emit(rc, p, vals, out); err != nil {
			return nil, err
		}
		start = end
	}
	return out, nil
}

// windowFnName is the window function of an output field's spec (its one
// $-prefixed field).
func windowFnName(fs []field) (string, bsoncore.Value, error) {
	var name string
	var arg bsoncore.Value
	for _, f := range fs {
		switch {
		case f.Name == "window":
		case strings.HasPrefix(f.Name, "$"):
			if name != "" {
				return "", arg, windowErr("Cannot specify two functions in window function spec")
			}
			name, arg = f.Name, f.Value
		default:
			return "", arg, windowErr("Window function found an unknown argument: %s", f.Name)
		}
	}
	if name == "" {
		return "", arg, windowErr("Expected a $-prefixed window function, window")
	}
	return name, arg, nil
}
