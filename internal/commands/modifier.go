package commands

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
	"github.com/cairndb/cairn/internal/update"
)

// parseModifier reads an update statement's u (the update language:
// operators, a replacement document or a pipeline); cv (the command's
// $$NOW and let) and consts (the statement's c) are what a pipeline update
// reads.
func parseModifier(u bsoncore.Value, arrayFilters []bsoncore.Document, multi bool, cv commandVars, consts map[string]bsoncore.Value) (*update.Update, error) {
	return update.Parse(u, update.Options{ArrayFilters: arrayFilters, Multi: multi, Now: cv.now, Vars: cv.let, Constants: consts})
}

// commandVars are the variables every expression of one command reads:
// $$NOW, fixed once per request so that all its statements, documents and
// stages (and its filters' $expr) see the same instant, as in MongoDB, and
// the command's let variables, evaluated at that instant.
type commandVars struct {
	now time.Time
	let map[string]bsoncore.Value // nil without let; owned copies
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
func constantsOf(st bsoncore.Document, now time.Time) (map[string]bsoncore.Value, error) {
	v, err := st.LookupErr("c")
	if err != nil {
		return nil, nil
	}
	d, ok := v.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'update.updates.c' is the wrong type '%s', expected type 'object'", typeName(v.Type))
	}
	return agg.EvalLet(owned(d), now)
}
