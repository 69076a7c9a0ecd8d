package commands

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/collation"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
)

// This file resolves the collation a command runs under, as MongoDB does:
// the command's (or a write statement's) collation field when given
// ({locale: "simple"} asks for the simple collation explicitly), else the
// default of the collection (create's collation) or view, else simple.

// parseCollationValue reads a collation field's value (field names it in
// errors).
func parseCollationValue(field string, v bsoncore.Value) (*collation.Collator, error) {
	d, ok := v.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s' is the wrong type '%s', expected type 'object'", field, typeName(v.Type))
	}
	return collation.Parse(d)
}

// defaultCollation is ns's default collation: a view's, or a collection's
// create option (nil: simple or no such namespace).
func defaultCollation(s *Session, ns engine.Namespace) (*collation.Collator, error) {
	st := s.Env.Engine.Catalog()
	if v := st.View(ns.DB, ns.Coll); v != nil {
		if len(v.Collation) == 0 {
			return nil, nil
		}
		return collation.Parse(bsoncore.Document(v.Collation))
	}
	c := st.Collection(ns.DB, ns.Coll)
	if c == nil || len(c.Options) == 0 {
		return nil, nil
	}
	d, ok := bsoncore.Document(c.Options).Lookup("collation").DocumentOK()
	if !ok {
		return nil, nil
	}
	return collation.Parse(d)
}

// commandCollation is the collation req runs under on ns: its collation
// field, else ns's default.
// A read of a view may name only the view's own collation
// (OptionNotSupportedOnView otherwise), as in MongoDB.
func commandCollation(s *Session, req *Request, ns engine.Namespace) (*collation.Collator, error) {
	v, ok := req.Arg("collation")
	if !ok {
		return defaultCollation(s, ns)
	}
	c, err := parseCollationValue(req.Name+".collation", v)
	if err != nil || !isView(s, ns.DB, ns.Coll) {
		return c, err
	}
	def, err := defaultCollation(s, ns)
	if err != nil {
		return nil, err
	}
	if !collation.Equal(c, def) {
		return nil, mongoerr.New(mongoerr.OptionNotSupportedOnView, "Cannot override a view's default collation")
	}
	return c, nil
}

// statementCollation is commandCollation for a write statement: its own
// collation field, else def (the namespace's default, commandVars).
func statementCollation(v bsoncore.Value, field string, def *collation.Collator) (*collation.Collator, error) {
	if v.Type != 0 {
		return parseCollationValue(field+".collation", v)
	}
	return def, nil
}

// withCollation is opts comparing strings by c (nil: simple; never a nil
// pointer inside the interface).
func withCollation(opts query.Options, c *collation.Collator) query.Options {
	if c != nil {
		opts.Collation = c
	}
	return opts
}
