package agg

import (
	"strings"

	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/keystring"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func init() { registerStage("$group", parseGroup) }

// groupStage is $group: documents grouped by the value of the _id
// expression (missing groups as null; numbers group by value, so 1 and 1.0
// are one group), each group one output document {_id, <accumulators>…}.
// Groups come out in the order their first document arrived.
//
// Memory: the keys and accumulator states count against
// Options.MaxMemory; over it the stage spills partial groups to disk with
// AllowDiskUse (group_spill.go) and fails with code 292 without.
type groupStage struct {
	id   expr.Expr
	accs []accSpec
	// mapID, when set, turns the _id value into the group key ($bucket).
	mapID func(bsoncore.Value) (bsoncore.Value, error)
	name  string // stage name for the memory error
	// partial: the stage ends a shard's part of a split pipeline
	// (Options.NeedsMerge) and emits each accumulator's partial state
	// instead of its result. merging ($doingMerge: true): the stage is the
	// merger's half, reading _id and each accumulator's partial state
	// from the fields of its input (the shards' partial groups) and
	// merging them (split.go).
	partial, merging bool
}

func parseGroup(arg bsoncore.Value, pc *parseContext) (stage, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, errorf(codeGroupNotObject, "a group's fields must be specified in an object")
	}
	g := &groupStage{name: "$group"}
	for _, f := range fieldsOf(arg) {
		if f.Name == "$doingMerge" {
			if f.Value.Type != bsoncore.TypeBoolean {
				return nil, errorf(codeGroupFieldOperator, "$doingMerge must be a boolean")
			}
			g.merging = f.Value.Boolean()
			continue
		}
		if f.Name == "_id" {
			if g.id != nil {
				return nil, errorf(codeGroupIDTwice, "a group's _id may only be specified once")
			}
			e, err := expr.ParseIn(f.Value, pc.scope)
			if err != nil {
				return nil, err
			}
			g.id = e
			continue
		}
		a, err := parseAccumulator(f.Name, f.Value, pc)
		if err != nil {
			return nil, err
		}
		g.accs = append(g.accs, a)
	}
	if g.id == nil {
		return nil, errorf(codeGroupNoID, "a group specification must include an _id")
	}
	return g, nil
}

// parseAccumulator parses name: {$op: arg}.
func parseAccumulator(name string, v bsoncore.Value, pc *parseContext) (accSpec, error) {
	switch {
	case strings.HasPrefix(name, "$"):
		return accSpec{}, errorf(codeGroupFieldOperator, "The field name '%s' cannot be an operator name", name)
	case strings.Contains(name, "."):
		return accSpec{}, errorf(codeGroupFieldDot, "The field name '%s' cannot contain '.'", name)
	case v.Type != bsoncore.TypeEmbeddedDocument:
		return accSpec{}, errorf(codeGroupAccNotObject, "The field '%s' must be an accumulator object", name)
	}
	fs := fieldsOf(v)
	if len(fs) != 1 {
		return accSpec{}, errorf(codeGroupAccOneField, "The field '%s' must specify one accumulator", name)
	}
	op, arg := fs[0].Name, fs[0].Value
	kind, ok := accumulators[op]
	if !ok {
		return accSpec{}, errorf(codeGroupUnknownAcc, "unknown group operator '%s'", op)
	}
	a := accSpec{name: name, op: op, kind: kind, coll: pc.opts.collator()}
	if kind.parse != nil {
		na, err := kind.parse(op, arg, pc)
		if err != nil {
			return accSpec{}, err
		}
		a.arg, a.n, a.makeN = na.arg, na.n, na.make
		return a, nil
	}
	switch {
	case kind.noArg:
		if arg.Type != bsoncore.TypeEmbeddedDocument || len(fieldsOf(arg)) != 0 {
			return accSpec{}, errorf(codeCountAccArg, "$count takes no arguments, i.e. $count:{}")
		}
		return a, nil
	case kind.unary && arg.Type == bsoncore.TypeArray:
		return accSpec{}, errorf(codeGroupAccUnary, "The %s accumulator is a unary operator", op)
	}
	e, err := expr.ParseIn(arg, pc.scope)
	if err != nil {
		return accSpec{}, err
	}
	a.arg = e
	return a, nil
}

// group is one group's state.
type group struct {
	key  string // keystring of id
	id   bsoncore.Value
	accs []accumulator
}

// groupOverhead approximates a group's bookkeeping bytes beyond its key,
// _id and accumulator states.
const groupOverhead = 96

func (g *groupStage) open(rc *runContext, in Source) (Source, error) {
	var (
		next  func() (bsoncore.Document, error)
		spill *groupSpill
	)
	done := func() error {
		if spill != nil {
			return spill.close()
		}
		return nil
	}
	return &funcSource{in: in, done: done, next: func() (bsoncore.Document, error) {
		if next == nil {
			spill = &groupSpill{dir: rc.opts.TempDir}
			var err error
			if next, err = g.run(rc, in, spill); err != nil {
				return nil, err
			}
		}
		return next()
	}}, nil
}

// run consumes in and returns a next function over the output documents:
// the groups held in memory, or, once some were spilled, the merge of
// the runs.
func (g *groupStage) run(rc *runContext, in Source, spill *groupSpill) (func() (bsoncore.Document, error), error) {
	ctx := rc.exprContext()
	nctx := rc.exprContext()
	index := map[string]*group{}
	var (
		groups []*group
		mem    int64
		key    []byte
	)
	for {
		d, err := in.Next()
		if err != nil {
			return nil, err
		}
		if d == nil {
			break
		}
		ctx.Reset(d)
		var id bsoncore.Value
		if g.merging {
			id = d.Lookup("_id")
		} else if id, err = g.id.Eval(ctx); err != nil {
			return nil, err
		}
		if id.Type == 0 {
			id = expr.Null
		}
		if g.mapID != nil {
			if id, err = g.mapID(id); err != nil {
				return nil, err
			}
		}
		key = keystring.AppendCollated(key[:0], id, rc.opts.keyCollator())
		gr := index[string(key)]
		if gr == nil {
			gr = &group{key: string(key), id: copyValue(id), accs: make([]accumulator, len(g.accs))}
			for i := range g.accs {
				if gr.accs[i], err = g.accs[i].newAcc(gr.id, nctx); err != nil {
					return nil, err
				}
			}
			index[gr.key] = gr
			groups = append(groups, gr)
			mem += int64(2*len(key)+len(id.Data)+groupOverhead) + int64(len(g.accs))*accOverhead
		}
		for i := range g.accs {
			a := &g.accs[i] // not a copy per document: accSpec is a dozen words
			if g.merging {
				v := d.Lookup(a.name)
				if err := gr.accs[i].merge(v); err != nil {
					return nil, err
				}
				mem += int64(len(v.Data))
				continue
			}
			v := expr.Missing
			if a.arg != nil {
				if v, err = a.arg.Eval(ctx); err != nil {
					return nil, err
				}
			}
			grew, err := gr.accs[i].add(v)
			if err != nil {
				return nil, err
			}
			mem += grew
		}
		if mem > rc.opts.MaxMemory {
			if !rc.opts.AllowDiskUse {
				return nil, rc.memoryError(g.name)
			}
			if err := spill.write(groups); err != nil {
				return nil, err
			}
			index, groups, mem = map[string]*group{}, nil, 0
		}
	}
	if len(spill.files) > 0 {
		if len(groups) > 0 {
			if err := spill.write(groups); err != nil {
				return nil, err
			}
		}
		return spill.mergeNext(g, nctx)
	}
	out := make([]bsoncore.Document, 0, len(groups))
	for _, gr := range groups {
		d, err := g.output(gr.id, gr.accs)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return sliceNext(out), nil
}

// output is a group's document: {_id, <accumulators>…}.
func (g *groupStage) output(id bsoncore.Value, accs []accumulator) (bsoncore.Document, error) {
	fs := make([]field, 0, len(g.accs)+1)
	fs = append(fs, field{"_id", id})
	for i, a := range g.accs {
		result := accs[i].result
		if g.partial {
			result = accs[i].partial
		}
		v, err := result()
		if err != nil {
			return nil, err
		}
		fs = append(fs, field{a.name, v})
	}
	return buildDoc(fs), nil
}
