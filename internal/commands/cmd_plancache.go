package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
)

// cmdPlanCacheClear forgets cached plans: of one query shape when query
// (with sort, projection and collation) names it, else of the whole
// collection. (The cache also drops an entry by itself when the
// collection's indexes change; see planner.Cache.) As MongoDB, sort,
// projection or collation without query is refused rather than read as
// "everything", and the shape's collation is the collection's default
// when none is named, as a find of that shape would run under.
func cmdPlanCacheClear(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	coll, err := req.Collection()
	if err != nil {
		return nil, err
	}
	ns := engine.Namespace{DB: req.DB, Coll: coll}
	q, hasQuery := req.Arg("query")
	if !hasQuery {
		for _, f := range []string{"sort", "projection", "collation"} {
			if _, ok := req.Arg(f); ok {
				return nil, mongoerr.New(mongoerr.BadValue, "sort, projection, or collation provided without query")
			}
		}
		s.Env.Exec.PlanCache().Clear(ns.String())
		return OK(dst), nil
	}
	filter, ok := q.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.BadValue, "required field query must be an object")
	}
	var sort, proj bsoncore.Document
	for _, f := range []struct {
		name string
		dst  *bsoncore.Document
	}{{"sort", &sort}, {"projection", &proj}} {
		if v, ok := req.Arg(f.name); ok {
			if *f.dst, ok = v.DocumentOK(); !ok {
				return nil, mongoerr.New(mongoerr.BadValue, "optional field %s must be an object", f.name)
			}
		}
	}
	if v, ok := req.Arg("collation"); ok {
		if d, isDoc := v.DocumentOK(); !isDoc {
			return nil, mongoerr.New(mongoerr.BadValue, "optional field collation must be an object")
		} else if len(d) <= 5 {
			return nil, mongoerr.New(mongoerr.BadValue, "optional field collation cannot be an empty object")
		}
	}
	c, err := commandCollation(s, req, ns)
	if err != nil {
		return nil, err
	}
	sel, err := newSelectionWith(ns, filter, withCollation(query.Options{}, c))
	if err != nil {
		return nil, err
	}
	if err := sel.SetSort(sort); err != nil {
		return nil, err
	}
	if err := sel.SetProjection(proj); err != nil {
		return nil, err
	}
	s.Env.Exec.ClearPlanShape(sel)
	return OK(dst), nil
}
