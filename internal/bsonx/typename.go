package bsonx

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

// TypeName is MongoDB's name for a BSON type, as $type, error messages and
// the shell print it; "missing" for type 0 (an absent value).
func TypeName(t bsoncore.Type) string { return typeNames[t] }

var typeNames = func() (n [256]string) {
	for i := range n {
		n[i] = "unknown"
	}
	n[0] = "missing"
	n[bsoncore.TypeDouble] = "double"
	n[bsoncore.TypeString] = "string"
	n[bsoncore.TypeEmbeddedDocument] = "object"
	n[bsoncore.TypeArray] = "array"
	n[bsoncore.TypeBinary] = "binData"
	n[bsoncore.TypeUndefined] = "undefined"
	n[bsoncore.TypeObjectID] = "objectId"
	n[bsoncore.TypeBoolean] = "bool"
	n[bsoncore.TypeDateTime] = "date"
	n[bsoncore.TypeNull] = "null"
	n[bsoncore.TypeRegex] = "regex"
	n[bsoncore.TypeDBPointer] = "dbPointer"
	n[bsoncore.TypeJavaScript] = "javascript"
	n[bsoncore.TypeSymbol] = "symbol"
	n[bsoncore.TypeCodeWithScope] = "javascriptWithScope"
	n[bsoncore.TypeInt32] = "int"
	n[bsoncore.TypeTimestamp] = "timestamp"
	n[bsoncore.TypeInt64] = "long"
	n[bsoncore.TypeDecimal128] = "decimal"
	n[bsoncore.TypeMinKey] = "minKey"
	n[bsoncore.TypeMaxKey] = "maxKey"
	return n
}()
