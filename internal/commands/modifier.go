package commands

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
	"github.com/cairndb/cairn/internal/update"
)

// modifier turns a matched document into its updated form, with the update
// language: operators ($set, $inc, $push with positional paths…) or a
// replacement document.
type modifier struct {
	u *update.Update
}

// parseModifier reads an update statement's u; cv (the command's $$NOW
// and let) and consts (the statement's c) are what a pipeline update reads.
func parseModifier(u bsoncore.Value, arrayFilters []bsoncore.Document, multi bool, cv commandVars, consts map[string]bsoncore.Value) (modifier, error) {
	parsed, err := update.Parse(u, update.Options{ArrayFilters: arrayFilters, Multi: multi, Now: cv.now, Vars: cv.let, Constants: consts})
	if err != nil {
		return modifier{}, err
	}
	return modifier{u: parsed}, nil
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
	cv := commandVars{now: time.Now()}
	let, err := req.Document("let")
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

// apply returns the new document for cur, or nil when the update changes
// nothing (a no-op writes nothing and does not count as modified). pos is
// the array position the filter's match bound (for the positional $), or -1.
func (m modifier) apply(cur bsoncore.Document, pos int) (bsoncore.Document, error) {
	next, modified, err := m.u.Apply(cur, update.ApplyContext{ArrayPos: pos, Now: time.Now()})
	if err != nil || !modified {
		return nil, err
	}
	return next, nil
}

// upsertDoc builds the document an upsert inserts when nothing matched: the
// filter's equality fields, then the update with $setOnInsert active. The
// engine makes the _id when neither gives one.
func (m modifier) upsertDoc(filter bsoncore.Document) (bsoncore.Document, error) {
	return m.u.Upsert(filter, update.ApplyContext{ArrayPos: -1, IsUpsertInsert: true, Now: time.Now()})
}

func (m modifier) isReplacement() bool { return m.u.IsReplacement() }
