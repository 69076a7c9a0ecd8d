package validation

import (
	"bytes"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
)

// Level is validationLevel: which writes are checked.
type Level uint8

// The validation levels, MongoDB's names in comments.
const (
	Strict   Level = iota // "strict": every insert and update
	Moderate              // "moderate": inserts, and updates of documents that pass
	Off                   // "off": nothing
)

// Action is validationAction: what a failing document does.
type Action uint8

// The validation actions.
const (
	Error Action = iota // "error": the write fails with DocumentValidationFailure
	Warn                // "warn": the write goes on and a warning is logged
)

var (
	levels  = map[string]Level{"strict": Strict, "moderate": Moderate, "off": Off}
	actions = map[string]Action{"error": Error, "warn": Warn}
)

// Rules are a collection's compiled validation settings.
type Rules struct {
	Validator bsoncore.Document // as set (a copy)
	Level     Level
	Action    Action
	filter    *query.Filter
	// usesNow: the validator reads $$NOW (or $$CLUSTER_TIME), which is the
	// time of the write, not of compilation, so each check compiles afresh.
	usesNow bool
}

// filterNow is the compiled validator for a check made now.
func (r *Rules) filterNow() *query.Filter {
	if !r.usesNow {
		return r.filter
	}
	if f, err := query.Parse(r.Validator); err == nil {
		return f
	}
	return r.filter
}

// FromOptions compiles the validation settings held in a collection's
// options; nil when there is no validator (or an empty one), which means
// every document passes. The options were checked by CheckOptions when set,
// so an error here means a damaged catalog record.
func FromOptions(opts bson.Raw) (*Rules, error) {
	if len(opts) == 0 {
		return nil, nil
	}
	v, err := bsoncore.Document(opts).LookupErr("validator")
	if err != nil {
		return nil, nil
	}
	d, ok := v.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "'validator' option must be a document, not %s", v.Type)
	}
	if len(d) <= 5 {
		return nil, nil
	}
	r := &Rules{Validator: bsoncore.Document(append([]byte(nil), d...))}
	if r.Level, err = levelOf(opts, ""); err != nil {
		return nil, err
	}
	if r.Action, err = actionOf(opts, ""); err != nil {
		return nil, err
	}
	if r.filter, err = compile(r.Validator); err != nil {
		return nil, err
	}
	r.usesNow = bytes.Contains(r.Validator, []byte("$$NOW")) || bytes.Contains(r.Validator, []byte("$$CLUSTER_TIME"))
	return r, nil
}

func levelOf(opts bson.Raw, cmd string) (Level, error) {
	return enumOf(opts, cmd, "validationLevel", levels, Strict)
}

func actionOf(opts bson.Raw, cmd string) (Action, error) {
	return enumOf(opts, cmd, "validationAction", actions, Error)
}

// enumOf reads the string option field, one of the names of values; def
// when absent. Errors name the field as cmd.field, as MongoDB's command
// parser does.
func enumOf[T any](opts bson.Raw, cmd, field string, values map[string]T, def T) (T, error) {
	v, err := bsoncore.Document(opts).LookupErr(field)
	if err != nil {
		return def, nil
	}
	s, ok := v.StringValueOK()
	if !ok {
		return def, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s' is the wrong type '%s', expected type 'string'", qualified(cmd, field), typeName(v.Type))
	}
	x, ok := values[s]
	if !ok {
		return def, mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field '%s' is not a valid value.", s, qualified(cmd, field))
	}
	return x, nil
}

func typeName(t bsoncore.Type) string { return bsonx.TypeName(t) }

func qualified(cmd, field string) string {
	if cmd == "" {
		return field
	}
	return cmd + "." + field
}

// CheckOptions checks the validation options of a create or collMod (cmd)
// for
// db.coll as MongoDB does: validator a document that parses as a filter
// without $text, $where, $near and $nearSphere; validationLevel and
// validationAction strings of the known values; no validator on system
// collections or in the admin, local and config databases (InvalidOptions).
func CheckOptions(cmd, db, coll string, opts bson.Raw) error {
	if len(opts) == 0 {
		return nil
	}
	if _, err := levelOf(opts, cmd); err != nil {
		return err
	}
	if _, err := actionOf(opts, cmd); err != nil {
		return err
	}
	v, err := bsoncore.Document(opts).LookupErr("validator")
	if err != nil {
		return nil
	}
	d, ok := v.DocumentOK()
	if !ok {
		return mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s' is the wrong type '%s', expected type 'object'", qualified(cmd, "validator"), typeName(v.Type))
	}
	if len(d) <= 5 {
		return nil
	}
	if strings.HasPrefix(coll, "system.") {
		return mongoerr.New(mongoerr.InvalidOptions, "Document validators not allowed on system collection %s.%s", db, coll)
	}
	switch db {
	case "admin", "local", "config":
		return mongoerr.New(mongoerr.InvalidOptions, "Document validators are not allowed on collection %s.%s in the %s internal database", db, coll, db)
	}
	_, err = compile(bsoncore.Document(d))
	return err
}

// compile parses a validator with the query features MongoDB forbids in
// validators refused first.
func compile(validator bsoncore.Document) (*query.Filter, error) {
	if err := banFeatures(validator); err != nil {
		return nil, err
	}
	f, err := query.Parse(validator)
	if err != nil {
		if e, ok := mongoerr.As(err); ok {
			return nil, &mongoerr.Error{Code: e.Code, Msg: "Parsing of collection validator failed :: caused by :: " + e.Msg, Extra: e.Extra}
		}
		return nil, err
	}
	return f, nil
}

// banFeatures refuses $text, $where, $near and $nearSphere anywhere in a
// validator's logical tree, as MongoDB's validator parser does (they
// describe queries, not documents).
func banFeatures(filter bsoncore.Document) error {
	elems, err := filter.Elements()
	if err != nil {
		return mongoerr.New(mongoerr.FailedToParse, "validator is not a valid BSON document: %v", err)
	}
	for _, e := range elems {
		switch k := e.Key(); k {
		case "$text", "$where":
			return mongoerr.New(mongoerr.QueryFeatureNotAllowed, "%s is not allowed in this context", k)
		case "$and", "$or", "$nor":
			if arr, ok := e.Value().ArrayOK(); ok {
				vals, _ := arr.Values()
				for _, v := range vals {
					if d, ok := v.DocumentOK(); ok {
						if err := banFeatures(d); err != nil {
							return err
						}
					}
				}
			}
		default:
			if d, ok := e.Value().DocumentOK(); ok {
				if _, err := d.LookupErr("$near"); err == nil {
					return mongoerr.New(mongoerr.QueryFeatureNotAllowed, "$geoNear, $near, and $nearSphere are not allowed in this context")
				}
				if _, err := d.LookupErr("$nearSphere"); err == nil {
					return mongoerr.New(mongoerr.QueryFeatureNotAllowed, "$geoNear, $near, and $nearSphere are not allowed in this context")
				}
			}
		}
	}
	return nil
}
