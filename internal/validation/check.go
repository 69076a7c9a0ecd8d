package validation

import (
	"fmt"

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

// Complies reports whether doc satisfies the validator, whatever the
// validation level and action (validate's nNonCompliantDocuments).
func (r *Rules) Complies(doc bsoncore.Document) bool { return r.passes(doc) }

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
	details := explain(f, r.Validator, doc)
	if len(details) > maxDetailsSize {
		// As MongoDB does when an explanation is too large: drop what is
		// proportional to the validator and the document, then give up
		// on the details.
		details = truncated(details)
		if len(details) > maxDetailsSize {
			details = bsoncore.NewDocumentBuilder().AppendString("reason", "the explanation of the failure exceeded its size limit").Build()
		}
	}
	b := bsoncore.NewDocumentBuilder()
	if id, err := doc.LookupErr("_id"); err == nil {
		b.AppendValue("failingDocumentId", id)
	}
	return b.AppendDocument("details", details).Build()
}

// explain is f.Explain, kept from taking the commit pipeline down with it:
// the decision is made (the document fails), only its explanation would
// be lost, so a fault there becomes a plain reason.
func explain(f *query.Filter, validator, doc bsoncore.Document) (details bsoncore.Document) {
	defer func() {
		if p := recover(); p != nil {
			details = bsoncore.NewDocumentBuilder().AppendString("reason", fmt.Sprintf("the failure could not be explained: %v", p)).Build()
		}
	}()
	return f.Explain(validator, doc)
}

// maxDetailsSize bounds an explanation, so that a write error carrying it
// stays well inside a reply (a failing document may be near 16 MiB and
// its values are quoted in consideredValue).
const maxDetailsSize = 8 << 20

// truncated is an explanation without specifiedAs, consideredValue(s) and
// the other fields that quote the validator or the document.
func truncated(d bsoncore.Document) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	elems, _ := d.Elements()
	for _, e := range elems {
		switch e.Key() {
		case "specifiedAs", "consideredValue", "consideredValues", "duplicatedValue", "expressionResult":
			continue
		}
		b.AppendValue(e.Key(), truncatedValue(e.Value()))
	}
	return b.Build()
}

func truncatedValue(v bsoncore.Value) bsoncore.Value {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		return bsoncore.Value{Type: v.Type, Data: truncated(v.Document())}
	case bsoncore.TypeArray:
		arr := bsoncore.NewArrayBuilder()
		vals, _ := v.Array().Values()
		for _, x := range vals {
			arr.AppendValue(truncatedValue(x))
		}
		return bsoncore.Value{Type: v.Type, Data: arr.Build()}
	}
	return v
}

// failure is the DocumentValidationFailure error carrying errInfo.
func failure(info bsoncore.Document) error {
	return &mongoerr.Error{
		Code:  mongoerr.DocumentValidationFailure,
		Msg:   FailureMessage,
		Extra: []mongoerr.Field{{Name: "errInfo", Value: bson.Raw(info)}},
	}
}
