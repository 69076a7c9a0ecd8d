package agg

import (
	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func init() {
	registerStage("$out", parseOut)
	registerStage("$merge", parseMerge)
}

// $out and $merge write the pipeline's results into a collection. Writing
// is the execution layer's job (internal/exec: it owns the commit pipeline):
// this package parses the stage into an Output, which the caller takes off
// the pipeline with Output and WithoutOutput before running the rest. The
// stage itself refuses to run, so a caller that forgets cannot silently
// drop the write.

// Local names for the codes of $out and $merge (numbers in mongoerr).
const (
	codeOutArgType         = mongoerr.OutArgType // "$out only supports a string or object argument"
	codeMergeIntoType      = mongoerr.MergeIntoType
	codeMergeOnType        = mongoerr.MergeOnType
	codeMergeOnElemType    = mongoerr.MergeOnElemType
	codeMergeOnEmpty       = mongoerr.MergeOnEmpty
	codeMergeOnDuplicate   = mongoerr.MergeOnDuplicate
	codeMergeWhenMatched   = mongoerr.MergeWhenMatched   // whenMatched neither a string nor an array
	codeMergeModes         = mongoerr.MergeModes         // unsupported whenMatched/whenNotMatched pair
	codeMergeLetNotAllowed = mongoerr.MergeLetNotAllowed // let without a whenMatched pipeline
	codeMergeLetNew        = mongoerr.MergeLetNew        // let redefines new
	codeMergeIntoEmpty     = mongoerr.MergeIntoEmpty
	codeMergeIntoNoColl    = mongoerr.MergeIntoNoColl
	codeMissingField       = mongoerr.IDLMissingField // IDL: "BSON field '…' is missing but a required field"
	codeUnknownField       = mongoerr.UnknownField    // IDL: "BSON field '…' is an unknown field."
)

// The merge modes (MongoDB's spellings).
const (
	WhenMatchedReplace      = "replace"
	WhenMatchedKeepExisting = "keepExisting"
	WhenMatchedMerge        = "merge"
	WhenMatchedFail         = "fail"
	WhenMatchedPipeline     = "pipeline" // whenMatched given as an array

	WhenNotMatchedInsert  = "insert"
	WhenNotMatchedDiscard = "discard"
	WhenNotMatchedFail    = "fail"
)

// supportedModes are the whenMatched/whenNotMatched pairs MongoDB
// implements: keepExisting and fail only make sense with insert.
var supportedModes = map[[2]string]bool{
	{WhenMatchedReplace, WhenNotMatchedInsert}: true, {WhenMatchedReplace, WhenNotMatchedFail}: true, {WhenMatchedReplace, WhenNotMatchedDiscard}: true,
	{WhenMatchedMerge, WhenNotMatchedInsert}: true, {WhenMatchedMerge, WhenNotMatchedFail}: true, {WhenMatchedMerge, WhenNotMatchedDiscard}: true,
	{WhenMatchedPipeline, WhenNotMatchedInsert}: true, {WhenMatchedPipeline, WhenNotMatchedFail}: true, {WhenMatchedPipeline, WhenNotMatchedDiscard}: true,
	{WhenMatchedKeepExisting, WhenNotMatchedInsert}: true,
	{WhenMatchedFail, WhenNotMatchedInsert}:         true,
}

// Output is a pipeline's final $out or $merge, parsed. The target
// namespace is not validated here (names are the catalog's rules); the
// caller checks it before writing.
type Output struct {
	// Stage is "$out" or "$merge".
	Stage string
	// DB and Coll name the target; DB is Options.DB when the stage names
	// no database.
	DB, Coll string

	// On lists $merge's match fields; nil means the default, _id.
	On []string
	// WhenMatched and WhenNotMatched are $merge's modes (the When*
	// constants), defaulted to merge and insert.
	WhenMatched, WhenNotMatched string

	// The whenMatched pipeline, its let variables and the run's variables
	// it sees (set by Pipeline.Output).
	pipeline []stage
	letNames []string
	letExprs []expr.Expr
	opts     *Options
	vars     map[string]bsoncore.Value
}

// outputStage holds a parsed $out or $merge at the end of a pipeline.
type outputStage struct{ out *Output }

func (s *outputStage) open(*runContext, Source) (Source, error) {
	return nil, mongoerr.New(mongoerr.InternalError, "%s must be carried out by the caller (Pipeline.Output)", s.out.Stage)
}

// Output returns the pipeline's final $out or $merge, or nil when it has
// none. Run refuses a pipeline that still has one: run WithoutOutput and
// write its results as the Output says.
func (p *Pipeline) Output() *Output {
	if len(p.stages) == 0 {
		return nil
	}
	s, ok := p.stages[len(p.stages)-1].(*outputStage)
	if !ok {
		return nil
	}
	o := *s.out
	o.opts, o.vars = &p.opts, p.vars
	return &o
}

// WithoutOutput returns the pipeline minus its final $out or $merge (p
// itself when it has none).
func (p *Pipeline) WithoutOutput() *Pipeline {
	if p.Output() == nil {
		return p
	}
	q := *p
	q.stages = p.stages[:len(p.stages)-1]
	if len(q.stages) == 0 {
		q.leading = nil
	}
	return &q
}

// checkOutputPosition enforces MongoDB's placement rules for both stages:
// last, and not in a $facet, $lookup or $unionWith sub-pipeline.
func checkOutputPosition(name string, pc *parseContext) error {
	if pc.inFacet {
		return errorf(codeStageNotInFacet, "%s is not allowed to be used within a $facet stage", name)
	}
	if pc.inLookup {
		return errorf(codeStageNotInLookup, "%s is not allowed within a $lookup's sub-pipeline", name)
	}
	if pc.inUnionWith {
		return errorf(codeStageNotInUnionWith, "%s is not allowed within a $unionWith's sub-pipeline", name)
	}
	if pc.index != pc.count-1 {
		return errorf(codeStageNotLast, "%s can only be the final stage in the pipeline", name)
	}
	return nil
}

// parseOut reads {$out: "coll"} or {$out: {db, coll}} (both required in
// the object form, as MongoDB 7.0's IDL says; timeseries output is not
// supported).
func parseOut(arg bsoncore.Value, pc *parseContext) (stage, error) {
	if err := checkOutputPosition("$out", pc); err != nil {
		return nil, err
	}
	o := &Output{Stage: "$out", DB: pc.opts.DB}
	switch arg.Type {
	case bsoncore.TypeString:
		o.Coll = arg.StringValue()
	case bsoncore.TypeEmbeddedDocument:
		var hasDB, hasColl bool
		for _, f := range fieldsOf(arg) {
			switch f.Name {
			case "db", "coll":
				s, ok := f.Value.StringValueOK()
				if !ok {
					return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$out.%s' is the wrong type '%s', expected type 'string'", f.Name, typeName(f.Value))
				}
				if f.Name == "db" {
					o.DB, hasDB = s, true
				} else {
					o.Coll, hasColl = s, true
				}
			case "timeseries":
				return nil, mongoerr.New(mongoerr.CommandNotSupported, "$out with timeseries is not supported by Cairn yet")
			default:
				return nil, errorf(codeUnknownField, "BSON field '$out.%s' is an unknown field.", f.Name)
			}
		}
		if !hasDB {
			return nil, errorf(codeMissingField, "BSON field '$out.db' is missing but a required field")
		}
		if !hasColl {
			return nil, errorf(codeMissingField, "BSON field '$out.coll' is missing but a required field")
		}
	default:
		return nil, errorf(codeOutArgType, "$out only supports a string or object argument, but found %s", typeName(arg))
	}
	return &outputStage{out: o}, nil
}

// parseMerge reads $merge's string shorthand or its full specification.
func parseMerge(arg bsoncore.Value, pc *parseContext) (stage, error) {
	if err := checkOutputPosition("$merge", pc); err != nil {
		return nil, err
	}
	o := &Output{Stage: "$merge", DB: pc.opts.DB, WhenMatched: WhenMatchedMerge, WhenNotMatched: WhenNotMatchedInsert}
	switch arg.Type {
	case bsoncore.TypeString:
		o.Coll = arg.StringValue()
		return &outputStage{out: o}, nil
	case bsoncore.TypeEmbeddedDocument:
	default:
		return nil, mongoerr.New(mongoerr.TypeMismatch, "$merge requires a string or object argument, but found %s", typeName(arg))
	}
	var hasInto bool
	var let, pipeline bsoncore.Value
	for _, f := range fieldsOf(arg) {
		var err error
		switch f.Name {
		case "into":
			hasInto = true
			err = o.parseInto(f.Value)
		case "on":
			err = o.parseOn(f.Value)
		case "let":
			if f.Value.Type != bsoncore.TypeEmbeddedDocument {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$merge.let' is the wrong type '%s', expected type 'object'", typeName(f.Value))
			}
			let = f.Value
		case "whenMatched":
			switch f.Value.Type {
			case bsoncore.TypeString:
				err = o.parseWhenMatched(f.Value.StringValue())
			case bsoncore.TypeArray:
				o.WhenMatched, pipeline = WhenMatchedPipeline, f.Value
			default:
				err = errorf(codeMergeWhenMatched, "$merge 'whenMatched' field  must be either a string or an array, but found %s", typeName(f.Value))
			}
		case "whenNotMatched":
			s, ok := f.Value.StringValueOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$merge.whenNotMatched' is the wrong type '%s', expected type 'string'", typeName(f.Value))
			}
			switch s {
			case WhenNotMatchedInsert, WhenNotMatchedDiscard, WhenNotMatchedFail:
				o.WhenNotMatched = s
			default:
				err = mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field '$merge.whenNotMatched' is not a valid value.", s)
			}
		case "targetCollectionVersion":
			// Sent by routers to shards; meaningless on one node.
		default:
			err = errorf(codeUnknownField, "BSON field '$merge.%s' is an unknown field.", f.Name)
		}
		if err != nil {
			return nil, err
		}
	}
	if !hasInto {
		return nil, errorf(codeMissingField, "BSON field '$merge.into' is missing but a required field")
	}
	if !supportedModes[[2]string{o.WhenMatched, o.WhenNotMatched}] {
		shown := o.WhenMatched
		if shown == WhenMatchedPipeline {
			shown = "[pipeline]"
		}
		return nil, errorf(codeMergeModes, "Combination of $merge modes 'whenMatched: %s' and 'whenNotMatched: %s' is not supported", shown, o.WhenNotMatched)
	}
	if o.WhenMatched != WhenMatchedPipeline {
		if let.Type != 0 {
			return nil, errorf(codeMergeLetNotAllowed, "Cannot use 'let' variables with 'whenMatched: %s' mode", o.WhenMatched)
		}
		return &outputStage{out: o}, nil
	}
	if err := o.parsePipeline(let, pipeline, pc); err != nil {
		return nil, err
	}
	return &outputStage{out: o}, nil
}

// parseInto reads into: a collection name, or {db, coll}.
func (o *Output) parseInto(v bsoncore.Value) error {
	switch v.Type {
	case bsoncore.TypeString:
		if v.StringValue() == "" {
			return errorf(codeMergeIntoEmpty, "$merge 'into' field cannot be an empty string")
		}
		o.Coll = v.StringValue()
		return nil
	case bsoncore.TypeEmbeddedDocument:
	default:
		return errorf(codeMergeIntoType, "$merge 'into' field  must be either a string or an object, but found %s", typeName(v))
	}
	for _, f := range fieldsOf(v) {
		switch f.Name {
		case "db", "coll":
			if f.Value.Type == bsoncore.TypeNull || f.Value.Type == bsoncore.TypeUndefined {
				continue // IDL reads null as absent
			}
			s, ok := f.Value.StringValueOK()
			if !ok {
				return mongoerr.New(mongoerr.TypeMismatch, "BSON field 'into.%s' is the wrong type '%s', expected type 'string'", f.Name, typeName(f.Value))
			}
			if f.Name == "db" {
				o.DB = s
			} else {
				o.Coll = s
			}
		default:
			return errorf(codeUnknownField, "BSON field 'into.%s' is an unknown field.", f.Name)
		}
	}
	if o.Coll == "" {
		return errorf(codeMergeIntoNoColl, "$merge 'into' field must specify a 'coll' that is not empty, null or undefined")
	}
	return nil
}

// parseOn reads on: a field path or an array of distinct ones.
func (o *Output) parseOn(v bsoncore.Value) error {
	var fields []string
	switch v.Type {
	case bsoncore.TypeString:
		fields = []string{v.StringValue()}
	case bsoncore.TypeArray:
		for _, e := range arrayValues(v) {
			s, ok := e.StringValueOK()
			if !ok {
				return errorf(codeMergeOnElemType, "$merge 'on' array elements must be strings, but found %s", typeName(e))
			}
			fields = append(fields, s)
		}
	default:
		return errorf(codeMergeOnType, "$merge 'on' field  must be either a string or an array of strings, but found %s", typeName(v))
	}
	if len(fields) == 0 {
		return errorf(codeMergeOnEmpty, "If explicitly specifying $merge 'on', must include at least one field")
	}
	seen := map[string]bool{}
	for _, f := range fields {
		if _, err := splitPath(f); err != nil {
			return err
		}
		if seen[f] {
			return errorf(codeMergeOnDuplicate, "Found a duplicate field '%s'", f)
		}
		seen[f] = true
	}
	o.On = fields
	return nil
}

func (o *Output) parseWhenMatched(s string) error {
	switch s {
	case WhenMatchedReplace, WhenMatchedKeepExisting, WhenMatchedMerge, WhenMatchedFail:
		o.WhenMatched = s
		return nil
	}
	// "pipeline" is a mode only by giving the pipeline itself.
	return mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field 'whenMatched' is not a valid value.", s)
}

// updateStages are the stages an update pipeline (and so a whenMatched
// pipeline) may hold: those that map one document to one document.
var updateStages = map[string]bool{
	"$addFields": true, "$set": true, "$project": true, "$unset": true, "$replaceRoot": true, "$replaceWith": true,
}

// IsUpdateStage reports whether a stage may appear in an update pipeline
// (package update's pipeline-style updates, $merge's whenMatched).
func IsUpdateStage(name string) bool { return updateStages[name] }

// parsePipeline parses the whenMatched pipeline and its let variables. The
// variables are expressions over the incoming document; without let, new is
// the incoming document ($$ROOT), and with whenNotMatched insert new is
// always defined (MongoDB adds it to the let it serialises).
func (o *Output) parsePipeline(let, pipeline bsoncore.Value, pc *parseContext) error {
	hasNew := false
	if let.Type != 0 {
		for _, f := range fieldsOf(let) {
			if f.Name == "new" {
				if s, ok := f.Value.StringValueOK(); !ok || s != "$$ROOT" {
					return errorf(codeMergeLetNew, "'let' may not define a value for the reserved 'new' variable other than '$$ROOT'")
				}
				hasNew = true
				continue
			}
			if !validVarName(f.Name) {
				return errorf(codeBadLetName, "'%s' starts with an invalid character for a user variable name", f.Name)
			}
			e, err := expr.ParseIn(f.Value, pc.scope)
			if err != nil {
				return err
			}
			o.letNames = append(o.letNames, f.Name)
			o.letExprs = append(o.letExprs, e)
		}
	}
	if let.Type == 0 || hasNew || o.WhenNotMatched == WhenNotMatchedInsert {
		o.letNames = append(o.letNames, "new")
		o.letExprs = append(o.letExprs, nil) // nil: the incoming document itself
	}
	var docs []bsoncore.Document
	for _, s := range arrayValues(pipeline) {
		if s.Type != bsoncore.TypeEmbeddedDocument {
			return mongoerr.New(mongoerr.TypeMismatch, "Each element of the 'pipeline' array must be an object")
		}
		name, _, err := stageNameArg(s.Data)
		if err != nil {
			return err
		}
		if !updateStages[name] {
			return mongoerr.New(mongoerr.InvalidOptions, "%s is not allowed to be used within an update", name)
		}
		docs = append(docs, s.Data)
	}
	sub := *pc
	sub.scope = expr.NewScope(pc.scope, o.letNames...)
	sub.inFacet, sub.inLookup, sub.inUnionWith = false, false, false
	var err error
	o.pipeline, err = parseStages(docs, &sub)
	return err
}

// ApplyPipeline runs the whenMatched pipeline over the target's existing
// document, with the let variables evaluated over the incoming one, and
// returns the document that replaces existing.
func (o *Output) ApplyPipeline(existing, incoming bsoncore.Document) (bsoncore.Document, error) {
	vars := make(map[string]bsoncore.Value, len(o.vars)+len(o.letNames))
	for k, v := range o.vars {
		vars[k] = v
	}
	ctx := expr.NewContext(incoming)
	for k, v := range o.vars {
		ctx.SetVar(k, v)
	}
	for i, name := range o.letNames {
		if o.letExprs[i] == nil {
			vars[name] = docValue(incoming)
			continue
		}
		v, err := o.letExprs[i].Eval(ctx)
		if err != nil {
			return nil, err
		}
		vars[name] = copyValue(v)
	}
	opts := o.opts
	if opts == nil {
		opts = &Options{}
	}
	out, err := runStages(&runContext{opts: opts, vars: vars}, o.pipeline, SliceSource([]bsoncore.Document{existing}))
	if err != nil {
		return nil, err
	}
	docs, err := ReadAll(out)
	if err != nil {
		return nil, err
	}
	if len(docs) != 1 {
		return nil, mongoerr.New(mongoerr.InternalError, "$merge whenMatched pipeline produced %d documents instead of one", len(docs))
	}
	return docs[0], nil
}
