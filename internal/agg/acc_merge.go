package agg

import (
	"github.com/cairndb/cairn/internal/expr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// $mergeObjects: the documents merged in input order, later fields
// overwriting earlier ones in place; null and missing are ignored, any
// other non-document is an error (40400).

func init() {
	registerAcc("$mergeObjects", accKind{unary: true, make: func(coll expr.Collator) accumulator { return &mergeAcc{} }})
}

type mergeAcc struct{ fields []field }

func (a *mergeAcc) add(v bsoncore.Value) (int64, error) {
	if expr.IsNullish(v) {
		return 0, nil
	}
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return 0, errorf(codeMergeObjectsType, "$mergeObjects requires object inputs, but input %s is of type %s", v, typeName(v))
	}
	var grew int64
	for _, f := range fieldsOf(v) {
		f.Value = copyValue(f.Value)
		grew += int64(len(f.Name) + len(f.Value.Data))
		a.fields = setField(a.fields, f.Name, f.Value)
	}
	return grew, nil
}

func (a *mergeAcc) result() (bsoncore.Value, error) { return docValue(buildDoc(a.fields)), nil }

func (a *mergeAcc) partial() (bsoncore.Value, error) { return a.result() }

func (a *mergeAcc) merge(p bsoncore.Value) error {
	_, err := a.add(p)
	return err
}
