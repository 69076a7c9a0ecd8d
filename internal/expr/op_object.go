package expr

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Object operators: $mergeObjects (expression form): its documents merged
// left to right, a later field overwriting an earlier one in place; null
// and missing are ignored, other non-documents are an error (40400).

func init() { register("$mergeObjects", parseVariadic("$mergeObjects", evalMergeObjects)) }

const codeMergeObjectsType = 40400

func evalMergeObjects(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	var keys []string
	vs := map[string]bsoncore.Value{}
	for _, v := range vals {
		if IsNullish(v) {
			continue
		}
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return Missing, errorf(codeMergeObjectsType, "$mergeObjects requires object inputs, but input %s is of type %s", v, TypeName(v))
		}
		it := elemsOf(v)
		for {
			k, fv, ok := it.next()
			if !ok {
				break
			}
			key := string(k)
			if _, seen := vs[key]; !seen {
				keys = append(keys, key)
			}
			vs[key] = fv
		}
	}
	idx, buf := bsoncore.AppendDocumentStart(nil)
	for _, k := range keys {
		buf = bsoncore.AppendValueElement(buf, k, vs[k])
	}
	buf, _ = bsoncore.AppendDocumentEnd(buf, idx)
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: buf}, nil
}
