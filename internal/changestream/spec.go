package changestream

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// Spec is a parsed $changeStream stage.
type Spec struct {
	AllChangesForCluster bool
	// FullDocument is "default", "updateLookup", "whenAvailable" or
	// "required"; FullDocumentBeforeChange "off", "whenAvailable" or
	// "required".
	FullDocument, FullDocumentBeforeChange string
	// ResumeAfter and StartAfter are the resume tokens given (nil: none).
	ResumeAfter, StartAfter *Token
	// StartAtOperationTime is set when HasStartAt.
	StartAtOperationTime hlc.Timestamp
	HasStartAt           bool
	ShowExpandedEvents   bool
}

// notYetOptions are options of MongoDB 7.0's $changeStream that Cairn
// refuses rather than ignores (internal or sharding-only ones).
var notYetOptions = map[string]bool{
	"showMigrationEvents": true, "showSystemEvents": true,
	"allowToRunOnConfigDB": true, "allowToRunOnSystemNS": true,
	"showRawUpdateDescription": true,
}

// ParseSpec reads the $changeStream stage's argument, with MongoDB's
// checks in MongoDB's order (field types and values, then the
// combinations of resume options).
func ParseSpec(arg bsoncore.Value) (Spec, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return Spec{}, mongoerr.New(mongoerr.ChangeStreamNotObject, "the $changeStream stage expects an object as argument, found %s", typeName(arg.Type))
	}
	sp := Spec{FullDocument: "default", FullDocumentBeforeChange: "off"}
	els, err := d.Elements()
	if err != nil {
		return Spec{}, mongoerr.New(mongoerr.FailedToParse, "$changeStream: %v", err)
	}
	wrongType := func(name string, v bsoncore.Value, want string) error {
		return mongoerr.New(mongoerr.TypeMismatch, "BSON field '$changeStream.%s' is the wrong type '%s', expected type '%s'", name, typeName(v.Type), want)
	}
	enum := func(name string, v bsoncore.Value, allowed ...string) (string, error) {
		s, ok := v.StringValueOK()
		if !ok {
			return "", wrongType(name, v, "string")
		}
		for _, a := range allowed {
			if s == a {
				return s, nil
			}
		}
		return "", mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field '$changeStream.%s' is not a valid value.", s, name)
	}
	boolean := func(name string, v bsoncore.Value) (bool, error) {
		if b, ok := v.BooleanOK(); ok {
			return b, nil
		}
		if n, ok := v.AsInt64OK(); ok && (v.Type == bsoncore.TypeInt32 || v.Type == bsoncore.TypeInt64 || v.Type == bsoncore.TypeDouble) {
			return n != 0, nil
		}
		return false, wrongType(name, v, "bool")
	}
	for _, e := range els {
		name, v := e.Key(), e.Value()
		switch name {
		case "allChangesForCluster":
			sp.AllChangesForCluster, err = boolean(name, v)
		case "showExpandedEvents":
			sp.ShowExpandedEvents, err = boolean(name, v)
		case "fullDocument":
			sp.FullDocument, err = enum(name, v, "default", "updateLookup", "whenAvailable", "required")
		case "fullDocumentBeforeChange":
			sp.FullDocumentBeforeChange, err = enum(name, v, "off", "whenAvailable", "required")
		case "resumeAfter", "startAfter":
			var t Token
			if _, ok := v.DocumentOK(); !ok {
				return Spec{}, wrongType(name, v, "object")
			}
			if t, err = ParseToken(v); err == nil {
				if name == "resumeAfter" {
					sp.ResumeAfter = &t
				} else {
					sp.StartAfter = &t
				}
			}
		case "startAtOperationTime":
			t, i, ok := v.TimestampOK()
			if !ok {
				return Spec{}, wrongType(name, v, "timestamp")
			}
			sp.StartAtOperationTime, sp.HasStartAt = hlc.New(t, i), true
		default:
			if notYetOptions[name] {
				return Spec{}, mongoerr.New(mongoerr.InvalidOptions, "$changeStream option '%s' is not supported by Cairn yet", name)
			}
			return Spec{}, mongoerr.New(mongoerr.UnknownField, "BSON field '$changeStream.%s' is an unknown field.", name)
		}
		if err != nil {
			return Spec{}, err
		}
	}
	if sp.ResumeAfter != nil && sp.StartAfter != nil {
		return Spec{}, mongoerr.New(mongoerr.ChangeStreamBothResume, "Do not specify both 'resumeAfter' and 'startAfter' in a $changeStream stage")
	}
	if sp.HasStartAt && (sp.ResumeAfter != nil || sp.StartAfter != nil) {
		return Spec{}, mongoerr.New(mongoerr.ChangeStreamResumeOptions, "Only one type of resume option is allowed, but multiple were found")
	}
	if sp.ResumeAfter != nil && sp.ResumeAfter.FromInvalidate {
		return Spec{}, mongoerr.New(mongoerr.InvalidResumeToken, "Attempting to resume a change stream using 'resumeAfter' is not allowed from an invalidate notification")
	}
	return sp, nil
}

// resumeToken is the token the stream resumes from (nil for none).
func (sp *Spec) resumeToken() *Token {
	if sp.ResumeAfter != nil {
		return sp.ResumeAfter
	}
	return sp.StartAfter
}
