package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/collation"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/exec"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/opctx"
)

// This file holds views: their definition (create with viewOn, collMod of a
// view), the refusal of every command that needs a collection, and the
// reads a view serves (find, count and distinct become the aggregation
// MongoDB turns them into; aggregate itself resolves the view in exec).
//
// Invariant "Views are read-only": Run refuses every command not marked
// onView in the registry whose first field names a view
// (CommandNotSupportedOnView); the engine refuses an implicit creation over
// a view's name too, so no write reaches one.

// checkView refuses a command that needs a collection when its namespace is
// a view. One map lookup when the database has views, none otherwise.
func checkView(s *Session, cmd *command, req *Request) error {
	if cmd.onView {
		return nil
	}
	name, ok := req.firstString()
	if !ok {
		return nil
	}
	v := s.Env.Engine.Catalog().View(req.DB, name)
	if v == nil || v.IsTimeseries() && tsCommands[req.Name] {
		return nil
	}
	return viewError(req.DB, name)
}

func viewError(db, name string) error {
	return mongoerr.New(mongoerr.CommandNotSupportedOnView, "Namespace %s.%s is a view, not a collection", db, name)
}

// isView reports whether db.name is a view now.
func isView(s *Session, db, name string) bool {
	return s.Env.Engine.Catalog().View(db, name) != nil
}

// viewOptionsOK are create's fields that may go with viewOn.
var viewOptionsOK = map[string]bool{"viewOn": true, "pipeline": true, "collation": true}

// createView runs create with viewOn (or pipeline): a view named name.
func createView(s *Session, req *Request, name string) error {
	viewOn, hasViewOn := req.Arg("viewOn")
	if !hasViewOn {
		return mongoerr.New(mongoerr.BadValue, "'pipeline' requires 'viewOn' to also be specified")
	}
	on, ok := viewOn.StringValueOK()
	if !ok {
		return mongoerr.New(mongoerr.TypeMismatch, "BSON field 'create.viewOn' is the wrong type '%s', expected type 'string'", typeName(viewOn.Type))
	}
	if on == "" {
		return mongoerr.New(mongoerr.BadValue, "'viewOn' cannot be empty")
	}
	elems, _ := req.Body.Elements()
	for _, el := range elems[1:] {
		if k := el.Key(); !viewOptionsOK[k] && !isGeneric(k) {
			return mongoerr.New(mongoerr.InvalidOptions, "option not supported on a view: %s", k)
		}
	}
	pipeline, err := viewPipeline(req)
	if err != nil {
		return err
	}
	collation, err := viewCollation(s, req, on)
	if err != nil {
		return err
	}
	return s.Env.Engine.CreateView(catalog.View{ID: req.DB + "." + name, ViewOn: on, Pipeline: pipeline, Collation: collation})
}

// viewPipeline reads and checks a view's pipeline: an array of stages that
// parse, with no $out or $merge (OptionNotSupportedOnView). Absent, it is
// empty.
func viewPipeline(req *Request) (bson.Raw, error) {
	stages, err := req.Docs("pipeline")
	if err != nil {
		return nil, err
	}
	if err := exec.CheckViewPipeline(req.DB, stages); err != nil {
		return nil, err
	}
	arr := bsoncore.NewArrayBuilder()
	for _, st := range stages {
		arr.AppendDocument(st)
	}
	return bson.Raw(arr.Build()), nil
}

// collModView applies collMod's viewOn and pipeline to the view name; any
// other option on a view is InvalidOptions, as in MongoDB.
func collModView(s *Session, req *Request, name string) error {
	cur := s.Env.Engine.Catalog().View(req.DB, name)
	if cur.IsTimeseries() {
		return collModTimeseries(s, req, name)
	}
	def := *cur
	elems, _ := req.Body.Elements()
	for _, el := range elems[1:] {
		switch k := el.Key(); {
		case k == "viewOn":
			on, ok := el.Value().StringValueOK()
			if !ok {
				return mongoerr.New(mongoerr.TypeMismatch, "BSON field 'collMod.viewOn' is the wrong type '%s', expected type 'string'", typeName(el.Value().Type))
			}
			if on == "" {
				return mongoerr.New(mongoerr.BadValue, "'viewOn' cannot be empty")
			}
			def.ViewOn = on
		case k == "pipeline":
			p, err := viewPipeline(req)
			if err != nil {
				return err
			}
			def.Pipeline = p
		case isGeneric(k):
		default:
			return mongoerr.New(mongoerr.InvalidOptions, "option not supported on a view: %s", k)
		}
	}
	return s.Env.Engine.ModifyView(def)
}

// collModTimeseries is collMod of a time series collection: its
// expireAfterSeconds (a number, or "off"); timeseries is refused before
// (registry notYet); viewOn, pipeline and a collection's options do not
// apply to one.
func collModTimeseries(s *Session, req *Request, name string) error {
	var secs *int64
	set := false
	elems, _ := req.Body.Elements()
	for _, el := range elems[1:] {
		switch k := el.Key(); {
		case k == "expireAfterSeconds":
			var err error
			if secs, err = collModExpiry(el.Value()); err != nil {
				return err
			}
			set = true
		case isGeneric(k):
		default:
			return mongoerr.New(mongoerr.InvalidOptions, "option not supported on a time-series collection: %s", k)
		}
	}
	if !set {
		return nil
	}
	return s.Env.Engine.SetTimeseriesExpiry(req.DB, name, secs)
}

// checkCollModTarget refuses viewOn and pipeline on a collection.
func checkCollModTarget(req *Request) error {
	for _, f := range []string{"viewOn", "pipeline"} {
		if _, ok := req.Arg(f); ok {
			return mongoerr.New(mongoerr.InvalidOptions, "option only supported on a view: %s", f)
		}
	}
	return nil
}

// viewListing is a view as listCollections shows it.
func viewListing(v *catalog.View, nameOnly bool) bsoncore.Document {
	if nameOnly {
		return doc("name", v.Name(), "type", "view")
	}
	opts := bsoncore.NewDocumentBuilder().AppendString("viewOn", v.ViewOn).AppendArray("pipeline", bsoncore.Array(v.Pipeline))
	if len(v.Collation) > 0 {
		opts.AppendDocument("collation", bsoncore.Document(v.Collation))
	}
	return doc("name", v.Name(), "type", "view", "options", opts.Build(), "info", doc("readOnly", true))
}

// findAsAggregation turns a find on a view into the pipeline MongoDB runs
// for it: $match of the filter, $sort, $skip, $limit, then $project of the
// projection. The options a pipeline cannot express are
// InvalidPipelineOperator, as in MongoDB.
func findAsAggregation(req *Request) ([]bsoncore.Document, error) {
	for _, f := range []string{"min", "max", "returnKey", "showRecordId", "tailable", "noCursorTimeout", "allowPartialResults", "awaitData"} {
		v, ok := req.Arg(f)
		if !ok || v.Type == bsoncore.TypeNull {
			continue
		}
		if b, isBool := v.BooleanOK(); isBool && !b {
			continue
		}
		if d, isDoc := v.DocumentOK(); isDoc && len(d) <= 5 {
			continue
		}
		return nil, mongoerr.New(mongoerr.InvalidPipelineOperator, "Option %s not supported in aggregation.", f)
	}
	var stages []bsoncore.Document
	add := func(name string, v bsoncore.Value) {
		stages = append(stages, bsoncore.NewDocumentBuilder().AppendValue(name, v).Build())
	}
	if v, ok := req.Arg("filter"); ok && v.Type != bsoncore.TypeNull {
		if _, isDoc := v.DocumentOK(); !isDoc {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'find.filter' is the wrong type '%s', expected type 'object'", typeName(v.Type))
		}
		add("$match", v)
	}
	if v, ok := req.Arg("sort"); ok && v.Type != bsoncore.TypeNull && len(v.Data) > 5 {
		add("$sort", v)
	}
	for _, f := range []string{"skip", "limit"} {
		n, err := req.SafeInt(f, 0)
		if err != nil {
			return nil, err
		}
		if err := nonNegative(f, n); err != nil {
			return nil, err
		}
		if n > 0 {
			add("$"+f, bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, n)})
		}
	}
	if v, ok := req.Arg("projection"); ok && v.Type != bsoncore.TypeNull && len(v.Data) > 5 {
		add("$project", v)
	}
	return stages, nil
}

// viewAggregate is the aggregation a read of a view runs: the command's
// own settings (let, allowDiskUse, hint) over stages, which exec prefixes
// with the view's resolved pipeline.
func viewAggregate(s *Session, req *Request, name string, stages []bsoncore.Document) (exec.Aggregate, error) {
	ns := engine.Namespace{DB: req.DB, Coll: name}
	a := exec.Aggregate{NS: ns, Stages: ownedAll(stages)}
	var err error
	if a.Opts, err = aggregateOptions(s, req, ns, false); err != nil {
		return a, err
	}
	if v, ok := req.Arg("hint"); ok {
		if a.Hint, err = hintValue(v); err != nil {
			return a, err
		}
	}
	return a, nil
}

// findOnView answers a find on a view from the aggregation it becomes; the
// cursor's namespace is the view's, as in MongoDB.
func findOnView(ctx context.Context, s *Session, req *Request, name string, dst []byte) (bsoncore.Document, error) {
	stages, err := findAsAggregation(req)
	if err != nil {
		return nil, err
	}
	batch := int64(DefaultFirstBatch)
	if v, ok := req.Arg("batchSize"); ok && v.Type != bsoncore.TypeNull {
		if batch, err = batchSizeOf("find.batchSize", v); err != nil {
			return nil, err
		}
	}
	single, err := req.Bool("singleBatch", false)
	if err != nil {
		return nil, err
	}
	a, err := viewAggregate(s, req, name, stages)
	if err != nil {
		return nil, err
	}
	s.Env.Ops.Query.Add(1)
	return runViewCursor(ctx, s, a, batch, single, dst)
}

// runViewCursor runs a over a view and replies with its first batch and,
// unless it is done or single, a cursor on the view's namespace.
func runViewCursor(ctx context.Context, s *Session, a exec.Aggregate, batch int64, single bool, dst []byte) (bsoncore.Document, error) {
	bound := opctx.NewBound()
	defer bound.Attach(ctx)()
	run, err := s.x().Aggregate(bound.Context(), a)
	if err != nil {
		bound.Close()
		return nil, err
	}
	ns := a.NS.String()
	out := &boundSource{Source: run, bound: bound}
	r, held, done, err := fillBatch(dst, ns, "firstBatch", nil, out, batch)
	if err != nil {
		_ = out.Close()
		return nil, err
	}
	if done || single {
		_ = out.Close()
		return finishCursor(r, 0, ns), nil
	}
	cur := s.Env.Cursors.Register(ns, out, held)
	cur.owner = s.userKey()
	cur.maxTime, _ = opctx.Remaining(ctx)
	s.Env.Cursors.Release(cur, false)
	return finishCursor(r, cur.ID, ns), nil
}

// countStages is count's selection as a pipeline over a view:
// [$match, $skip, $limit].
func countStages(req *Request) ([]bsoncore.Document, error) {
	var stages []bsoncore.Document
	if q, err := req.Document("query"); err != nil {
		return nil, err
	} else if len(q) > 5 {
		stages = append(stages, doc("$match", q))
	}
	skip, err := req.Int("skip", 0)
	if err != nil {
		return nil, err
	}
	if skip < 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "skip value is negative in count query")
	}
	limit, err := req.Int("limit", 0)
	if err != nil {
		return nil, err
	}
	if skip > 0 {
		stages = append(stages, doc("$skip", skip))
	}
	if limit = max(limit, -limit); limit > 0 {
		stages = append(stages, doc("$limit", limit))
	}
	return stages, nil
}

// countOnView counts a view's documents that match query, after skip and
// limit.
func countOnView(ctx context.Context, s *Session, req *Request, name string) (int64, error) {
	stages, err := countStages(req)
	if err != nil {
		return 0, err
	}
	a, err := viewAggregate(s, req, name, stages)
	if err != nil {
		return 0, err
	}
	src, err := s.x().Aggregate(ctx, a)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	return exec.CountOf(src)
}

// explainOnView explains find, count or distinct on a view as the
// aggregation each becomes (MongoDB's explain shows that pipeline too).
func (x *explainer) explainOnView(req *Request, name string) (bson.D, error) {
	var stages []bsoncore.Document
	var err error
	switch req.Name {
	case "find":
		stages, err = findAsAggregation(req)
	case "count":
		if stages, err = countStages(req); err == nil {
			stages = append(stages, doc("$count", "count"))
		}
	case "distinct":
		if q, qerr := req.Document("query"); qerr != nil {
			err = qerr
		} else if len(q) > 5 {
			stages = append(stages, doc("$match", q))
		}
		key, _ := req.String("key", "")
		stages = append(stages, doc("$unwind", doc("path", "$"+key, "preserveNullAndEmptyArrays", true)),
			doc("$group", doc("_id", nil, "distinct", doc("$addToSet", "$"+key))))
	default:
		return nil, viewError(req.DB, name)
	}
	if err != nil {
		return nil, err
	}
	return x.aggregateStages(engine.Namespace{DB: req.DB, Coll: name}, false, ownedAll(stages), req)
}

// distinctOnView is distinct over the documents of a view matching query.
func distinctOnView(ctx context.Context, s *Session, req *Request, name, key string) ([]bsoncore.Value, error) {
	var stages []bsoncore.Document
	if q, err := req.Document("query"); err != nil {
		return nil, err
	} else if len(q) > 5 {
		stages = append(stages, doc("$match", q))
	}
	a, err := viewAggregate(s, req, name, stages)
	if err != nil {
		return nil, err
	}
	src, err := s.x().Aggregate(ctx, a)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	return exec.DistinctOf(src, key, MaxBSONObjectSize, a.Opts.Collation)
}

// viewCollation reads a view's collation: absent, the view has the simple
// collation, whatever its source's default (MongoDB's rule); a view on a
// view must have the same collation as that view (OptionNotSupportedOnView).
func viewCollation(s *Session, req *Request, on string) (bson.Raw, error) {
	c, err := req.Document("collation")
	if err != nil {
		return nil, err
	}
	var own bson.Raw
	if len(c) > 0 {
		coll, err := collation.Parse(c)
		if err != nil {
			return nil, err
		}
		if coll != nil {
			own = bson.Raw(coll.Document()) // normalized, as MongoDB stores it
		}
	}
	if base := s.Env.Engine.Catalog().View(req.DB, on); base != nil && string(base.Collation) != string(own) {
		return nil, mongoerr.New(mongoerr.OptionNotSupportedOnView, "View %s.%s has a collation that does not match the collation of view %s.%s", req.DB, req.First().StringValue(), req.DB, on)
	}
	return own, nil
}
