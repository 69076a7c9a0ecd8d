package commands

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
)

// modifier turns a matched document into its updated form: a replacement
// document, or (with the update language) operators such as $set.
type modifier interface {
	// apply returns the new document for cur; pos is the array position the
	// filter's match bound (for the positional $), or -1.
	apply(cur bsoncore.Document, pos int, inserting bool) (bsoncore.Document, error)
	// upsertDoc builds the document to insert when nothing matched.
	upsertDoc(filter bsoncore.Document) (bsoncore.Document, error)
	isReplacement() bool
}

// parseModifier reads an update statement's u.
func parseModifier(u bsoncore.Value, arrayFilters []bsoncore.Document) (modifier, error) {
	switch u.Type {
	case bsoncore.TypeEmbeddedDocument:
		if isOperatorDoc(u) {
			return nil, mongoerr.New(mongoerr.FailedToParse, "update operators need the update language, which this build does not have yet")
		}
		if len(arrayFilters) > 0 {
			return nil, mongoerr.New(mongoerr.FailedToParse, "arrayFilters may only be specified with update operators")
		}
		return replacement{u.Document()}, nil
	case bsoncore.TypeArray:
		return nil, mongoerr.New(mongoerr.FailedToParse, "pipeline-style updates are not supported by this build yet")
	}
	return nil, mongoerr.New(mongoerr.FailedToParse, "Update argument must be either an object or an array")
}

// replacement is a replacement-style update: the new document whole.
type replacement struct{ doc bsoncore.Document }

func (r replacement) apply(bsoncore.Document, int, bool) (bsoncore.Document, error) {
	return r.doc, nil
}

func (r replacement) isReplacement() bool { return true }

// upsertDoc is the replacement, with _id from the filter's equality on _id
// when the replacement has none, as MongoDB does.
func (r replacement) upsertDoc(filter bsoncore.Document) (bsoncore.Document, error) {
	if _, err := r.doc.LookupErr("_id"); err == nil {
		return r.doc, nil
	}
	f, err := query.Parse(filter)
	if err != nil {
		return nil, err
	}
	id, ok := f.IDEquality()
	if !ok {
		return r.doc, nil
	}
	out := NewReply(nil).Value("_id", id)
	elems, _ := r.doc.Elements()
	for _, el := range elems {
		*out.Raw() = append(*out.Raw(), el...)
	}
	return out.End(), nil
}
