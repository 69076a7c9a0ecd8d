package expr

import (
	"github.com/cairndb/cairn/internal/mongoerr"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Object operators: $mergeObjects (expression form): its documents merged
// left to right, a later field overwriting an earlier one in place; null
// and missing are ignored, other non-documents are an error (40400).
// $objectToArray turns a document into [{k, v}, …] and $arrayToObject
// turns [{k, v}, …] or [[k, v], …] back (a repeated key keeps its first
// position and its last value). $getField, $setField and $unsetField are in
// op_object_fields.go.

func init() {
	register("$mergeObjects", parseVariadic("$mergeObjects", evalMergeObjects))
	register("$objectToArray", parseFixed("$objectToArray", 1, evalObjectToArray))
	register("$arrayToObject", parseFixed("$arrayToObject", 1, evalArrayToObject))
}

const (
	codeMergeObjectsType    = mongoerr.MergeObjectsType
	codeObjectToArrayType   = mongoerr.ObjectToArrayType
	codeArrayToObjectType   = mongoerr.ArrayToObjectType
	codeArrayToObjectNotObj = mongoerr.ArrayToObjectNotObject // objects first, then something else
	codeArrayToObjectKeys   = mongoerr.ArrayToObjectKeys      // an object without exactly two fields
	codeArrayToObjectKV     = mongoerr.ArrayToObjectKV        // an object without both k and v
	codeArrayToObjectKType  = mongoerr.ArrayToObjectKeyType   // an object's k is not a string
	codeArrayToObjectPairK  = mongoerr.ArrayToObjectPairK     // a pair's key is not a string
	codeArrayToObjectNotArr = mongoerr.ArrayToObjectNotArray  // pairs first, then something else
	codeArrayToObjectPair   = mongoerr.ArrayToObjectPair      // an array that is not a pair
	codeArrayToObjectElem   = mongoerr.ArrayToObjectElem      // first element neither array nor object
	codeArrayToObjectNulK   = mongoerr.ArrayToObjectNulK
	codeArrayToObjectNulKV  = mongoerr.ArrayToObjectNulKV
)

// fieldSet builds a document field by field as MongoDB's MutableDocument
// does: a repeated name keeps its first position and takes the last value.
type fieldSet struct {
	keys []string
	vals map[string]bsoncore.Value
}

func (f *fieldSet) set(k string, v bsoncore.Value) {
	if f.vals == nil {
		f.vals = map[string]bsoncore.Value{}
	}
	if _, seen := f.vals[k]; !seen {
		f.keys = append(f.keys, k)
	}
	f.vals[k] = v
}

func (f *fieldSet) value() bsoncore.Value {
	idx, buf := bsoncore.AppendDocumentStart(nil)
	for _, k := range f.keys {
		buf = bsoncore.AppendValueElement(buf, k, f.vals[k])
	}
	buf, _ = bsoncore.AppendDocumentEnd(buf, idx)
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: buf}
}

func evalMergeObjects(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	var out fieldSet
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
			out.set(string(k), fv)
		}
	}
	return out.value(), nil
}

func evalObjectToArray(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	doc := vals[0]
	if IsNullish(doc) {
		return Null, nil
	}
	if doc.Type != bsoncore.TypeEmbeddedDocument {
		return Missing, errorf(codeObjectToArrayType, "$objectToArray requires a document input, found: %s", TypeName(doc))
	}
	var out []bsoncore.Value
	it := elemsOf(doc)
	for {
		k, v, ok := it.next()
		if !ok {
			return Array(out), nil
		}
		idx, buf := bsoncore.AppendDocumentStart(nil)
		buf = bsoncore.AppendStringElement(buf, "k", string(k))
		buf = bsoncore.AppendValueElement(buf, "v", v)
		buf, _ = bsoncore.AppendDocumentEnd(buf, idx)
		out = append(out, bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: buf})
	}
}

func evalArrayToObject(_ string, vals []bsoncore.Value) (bsoncore.Value, error) {
	arr := vals[0]
	if IsNullish(arr) {
		return Null, nil
	}
	if arr.Type != bsoncore.TypeArray {
		return Missing, errorf(codeArrayToObjectType, "$arrayToObject requires an array input, found: %s", TypeName(arr))
	}
	elems := arrayValues(arr)
	var out fieldSet
	if len(elems) > 0 && elems[0].Type != bsoncore.TypeArray && elems[0].Type != bsoncore.TypeEmbeddedDocument {
		return Missing, errorf(codeArrayToObjectElem, "Unrecognised input type format for $arrayToObject: %s", TypeName(elems[0]))
	}
	for _, e := range elems {
		k, v, err := keyValueOf(e, elems[0].Type)
		if err != nil {
			return Missing, err
		}
		out.set(k, v)
	}
	return out.value(), nil
}

// keyValueOf reads one $arrayToObject element in the format (array or
// document) that the first element set.
func keyValueOf(e bsoncore.Value, format bsoncore.Type) (string, bsoncore.Value, error) {
	if format == bsoncore.TypeArray {
		if e.Type != bsoncore.TypeArray {
			return "", Missing, errorf(codeArrayToObjectNotArr, "$arrayToObject requires a consistent input format. Elements must all be arrays or all be objects. Array was detected, now found: %s", TypeName(e))
		}
		pair := arrayValues(e)
		if len(pair) != 2 {
			return "", Missing, errorf(codeArrayToObjectPair, "$arrayToObject requires an array of size 2 arrays,found array of size: %d", len(pair))
		}
		k, ok := stringOf(pair[0])
		if !ok {
			return "", Missing, errorf(codeArrayToObjectPairK, "$arrayToObject requires an array of key-value pairs, where the key must be of type string. Found key type: %s", TypeName(pair[0]))
		}
		if strings.IndexByte(k, 0) >= 0 {
			return "", Missing, errorf(codeArrayToObjectNulK, "Key field cannot contain an embedded null byte")
		}
		return k, pair[1], nil
	}
	if e.Type != bsoncore.TypeEmbeddedDocument {
		return "", Missing, errorf(codeArrayToObjectNotObj, "$arrayToObject requires a consistent input format. Elements must all be arrays or all be objects. Object was detected, now found: %s", TypeName(e))
	}
	n := 0
	for it := elemsOf(e); ; n++ {
		if _, _, ok := it.next(); !ok {
			break
		}
	}
	if n != 2 {
		return "", Missing, errorf(codeArrayToObjectKeys, "$arrayToObject requires an object keys of 'k' and 'v'. Found incorrect number of keys:%d", n)
	}
	kv, v := field(e, "k"), field(e, "v")
	if kv.Type == 0 || v.Type == 0 {
		return "", Missing, errorf(codeArrayToObjectKV, "$arrayToObject requires an object with keys 'k' and 'v'. Missing either or both keys from: %s", bsoncore.Document(e.Data))
	}
	k, ok := stringOf(kv)
	if !ok {
		return "", Missing, errorf(codeArrayToObjectKType, "$arrayToObject requires an object with keys 'k' and 'v', where the value of 'k' must be of type string. Found type: %s", TypeName(kv))
	}
	if strings.IndexByte(k, 0) >= 0 {
		return "", Missing, errorf(codeArrayToObjectNulKV, "Key field cannot contain an embedded null byte")
	}
	return k, v, nil
}
