package commands

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/collation"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
	"github.com/cairndb/cairn/internal/update"
)

// parseModifier reads an update statement's u (the update language:
// operators, a replacement document or a pipeline); cv (the command's
// $$NOW and let) and consts (the statement's c) are what a pipeline update
// reads.
//
// Under a non-simple collation (coll), what the update language would
// compare without it is refused (InvalidOptions) rather than answered
// simply: arrayFilters, pipeline updates, and the operators that compare
// values ($addToSet, $pull, $pullAll, $min, $max, $push with $sort).
func parseModifier(u bsoncore.Value, arrayFilters []bsoncore.Document, multi bool, cv commandVars, consts map[string]bsoncore.Value, coll *collation.Collator) (*update.Update, error) {
	if coll != nil {
		if err := collatedUpdate(u, arrayFilters); err != nil {
			return nil, err
		}
	}
	return update.Parse(u, update.Options{ArrayFilters: arrayFilters, Multi: multi, Now: cv.now, Vars: cv.let, Constants: consts})
}

// commandVars are the variables every expression of one command reads:
// $$NOW, fixed once per request so that all its statements, documents and
// stages (and its filters' $expr) see the same instant, as in MongoDB, and
// the command's let variables, evaluated at that instant.
type commandVars struct {
	now time.Time
	let map[string]bsoncore.Value // nil without let; owned copies
	// collation is the namespace's default collation, which a write
	// statement without its own runs under (see writeVars).
	collation *collation.Collator
}

// writeVars is requestVars for a write batch on ns: the variables and ns's
// default collation.
func writeVars(s *Session, req *Request, ns engine.Namespace) (commandVars, error) {
	cv, err := requestVars(req)
	if err != nil {
		return cv, err
	}
	cv.collation, err = defaultCollation(s, ns)
	return cv, err
}

// requestVars fixes $$NOW for req and evaluates its let document.
func requestVars(req *Request) (commandVars, error) {
	return varsOf(req, req.arg("let"))
}

// varsOf is requestVars with the let field's value v (Type 0 when absent).
func varsOf(req *Request, v bsoncore.Value) (commandVars, error) {
	cv := commandVars{now: req.now()}
	let, err := req.documentOf("let", v)
	if err != nil || let == nil {
		return cv, err
	}
	cv.let, err = agg.EvalLet(owned(let), cv.now)
	return cv, err
}

// filterOptions is what a filter's $expr reads of cv.
func (cv commandVars) filterOptions() query.Options {
	return query.Options{Vars: cv.let, Now: cv.now}
}

// constantsOf evaluates an update statement's c (nil when absent) at the
// command's $$NOW.
func constantsOf(v bsoncore.Value, now time.Time) (map[string]bsoncore.Value, error) {
	if v.Type == 0 {
		return nil, nil
	}
	d, ok := v.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'update.updates.c' is the wrong type '%s', expected type 'object'", typeName(v.Type))
	}
	return agg.EvalLet(owned(d), now)
}

// collatedUpdate refuses an update whose comparisons would ignore a
// non-simple collation (see parseModifier).
func collatedUpdate(u bsoncore.Value, arrayFilters []bsoncore.Document) error {
	refuse := func(what string) error {
		return mongoerr.New(mongoerr.InvalidOptions, "a non-simple collation with %s is not supported yet: Cairn would compare its values without the collation", what)
	}
	if len(arrayFilters) > 0 {
		return refuse("arrayFilters")
	}
	if u.Type == bsoncore.TypeArray {
		return refuse("a pipeline update")
	}
	d, ok := u.DocumentOK()
	if !ok {
		return nil
	}
	elems, _ := d.Elements()
	for _, el := range elems {
		switch op := el.Key(); op {
		case "$addToSet", "$pull", "$pullAll", "$min", "$max":
			return refuse(op)
		case "$push":
			fields, _ := el.Value().DocumentOK()
			vals, _ := fields.Elements()
			for _, f := range vals {
				if m, ok := f.Value().DocumentOK(); ok {
					if _, err := m.LookupErr("$sort"); err == nil {
						return refuse("$push's $sort")
					}
				}
			}
		}
	}
	return nil
}
