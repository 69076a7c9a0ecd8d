package validation

import (
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
)

// FailureMessage is the errmsg of DocumentValidationFailure.
const FailureMessage = "Document failed validation"

// CheckInsert decides whether doc (with its _id) may be inserted. err is
// DocumentValidationFailure with errInfo when it may not; warning is the
// errInfo to log when the document fails under validationAction "warn"
// (the insert goes on). A nil Rules passes everything.
func (r *Rules) CheckInsert(doc bsoncore.Document) (warning bsoncore.Document, err error) {
	return r.CheckUpdate(nil, doc)
}

// CheckUpdate decides whether the document old may become next (old nil:
// next is inserted). Under validationLevel "moderate" a document that
// already fails may be updated to another failing document; otherwise it is
// CheckInsert of next.
func (r *Rules) CheckUpdate(old, next bsoncore.Document) (warning bsoncore.Document, err error) {
	if r == nil || r.Level == Off {
		return nil, nil
	}
	info := r.explainFailure(next)
	if info == nil {
		return nil, nil
	}
	if r.Action == Warn {
		return info, nil
	}
	if old != nil && r.Level == Moderate && !r.passes(old) {
		return nil, nil
	}
	return nil, failure(info)
}

// passes reports whether doc satisfies the validator; a validator that
// fails to evaluate (an $expr error) does not pass.
func (r *Rules) passes(doc bsoncore.Document) bool { return passes(r.filterNow(), doc) }

func passes(f *query.Filter, doc bsoncore.Document) bool {
	res, err := f.Exec(doc)
	return err == nil && res.Matched
}

// explainFailure is nil when doc passes, else MongoDB's errInfo:
// {failingDocumentId, details}.
func (r *Rules) explainFailure(doc bsoncore.Document) bsoncore.Document {
	f := r.filterNow()
	if passes(f, doc) {
		return nil
	}
	b := bsoncore.NewDocumentBuilder()
	if id, err := doc.LookupErr("_id"); err == nil {
		b.AppendValue("failingDocumentId", id)
	}
	return b.AppendDocument("details", f.Explain(r.Validator, doc)).Build()
}

// failure is the DocumentValidationFailure error carrying errInfo.
func failure(info bsoncore.Document) error {
	return &mongoerr.Error{
		Code:  mongoerr.DocumentValidationFailure,
		Msg:   FailureMessage,
		Extra: []mongoerr.Field{{Name: "errInfo", Value: bson.Raw(info)}},
	}
}
