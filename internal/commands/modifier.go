package commands

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/update"
)

// modifier turns a matched document into its updated form, with the update
// language: operators ($set, $inc, $push with positional paths…) or a
// replacement document.
type modifier struct {
	u *update.Update
}

// parseModifier reads an update statement's u; vars (the command's let)
// and consts (the statement's c) are the variables of a pipeline update.
func parseModifier(u bsoncore.Value, arrayFilters []bsoncore.Document, multi bool, vars, consts map[string]bsoncore.Value) (modifier, error) {
	parsed, err := update.Parse(u, update.Options{ArrayFilters: arrayFilters, Multi: multi, Vars: vars, Constants: consts})
	if err != nil {
		return modifier{}, err
	}
	return modifier{u: parsed}, nil
}

// letVars evaluates a write command's let document (nil when absent).
func letVars(req *Request) (map[string]bsoncore.Value, error) {
	let, err := req.Document("let")
	if err != nil || let == nil {
		return nil, err
	}
	return agg.EvalLet(owned(let), time.Time{})
}

// constantsOf evaluates an update statement's c (nil when absent).
func constantsOf(st bsoncore.Document) (map[string]bsoncore.Value, error) {
	v, err := st.LookupErr("c")
	if err != nil {
		return nil, nil
	}
	d, ok := v.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'update.updates.c' is the wrong type '%s', expected type 'object'", typeName(v.Type))
	}
	return agg.EvalLet(owned(d), time.Time{})
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
