package query_test

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestExplain checks Filter.Explain against the errInfo.details MongoDB 7.0
// produces for the same validator and document. The cases marked "jstests"
// are the expectations of MongoDB's own doc_validation tests; the others
// follow doc_validation_error.cpp's rules for each operator.
func TestExplain(t *testing.T) {
	for _, tc := range []struct {
		name, filter, doc, want string
	}{
		{"equality (jstests doc_validation_options)", `{"a": 1}`, `{"_id": 1, "a": 2}`,
			`{"operatorName": "$eq", "specifiedAs": {"a": 1}, "reason": "comparison failed", "consideredValue": 2}`},
		{"missing field", `{"a": {"$gt": 1}}`, `{"_id": 1}`,
			`{"operatorName": "$gt", "specifiedAs": {"a": {"$gt": 1}}, "reason": "field was missing"}`},
		{"array elements are the considered values", `{"a": {"$gt": 5}}`, `{"a": [1, 2]}`,
			`{"operatorName": "$gt", "specifiedAs": {"a": {"$gt": 5}}, "reason": "comparison failed", "consideredValues": [1, 2]}`},
		{"dotted path through an array", `{"a.b": {"$lt": 0}}`, `{"a": [{"b": 1}, {"c": 2}, {"b": 3}]}`,
			`{"operatorName": "$lt", "specifiedAs": {"a.b": {"$lt": 0}}, "reason": "comparison failed", "consideredValues": [1, 3]}`},
		{"implicit $and numbers each operator", `{"a": {"$gt": 1, "$lt": 10}, "b": {"$exists": true}}`, `{"a": 20}`,
			`{"operatorName": "$and", "clausesNotSatisfied": [
				{"index": 1, "details": {"operatorName": "$lt", "specifiedAs": {"a": {"$lt": 10}}, "reason": "comparison failed", "consideredValue": 20}},
				{"index": 2, "details": {"operatorName": "$exists", "specifiedAs": {"b": {"$exists": true}}, "reason": "path does not exist"}}]}`},
		{"$ne explains the equality that held", `{"a": {"$ne": 1}}`, `{"a": 1}`,
			`{"operatorName": "$ne", "specifiedAs": {"a": {"$ne": 1}}, "reason": "comparison succeeded", "consideredValue": 1}`},
		{"$nin", `{"a": {"$nin": [1, 2]}}`, `{"a": 2}`,
			`{"operatorName": "$nin", "specifiedAs": {"a": {"$nin": [1, 2]}}, "reason": "matching value found in array", "consideredValue": 2}`},
		{"$exists false", `{"a": {"$exists": false}}`, `{"a": 1}`,
			`{"operatorName": "$exists", "specifiedAs": {"a": {"$exists": false}}, "reason": "path does exist"}`},
		{"$not inverts its operator", `{"a": {"$not": {"$gt": 5}}}`, `{"a": 7}`,
			`{"operatorName": "$not", "details": {"operatorName": "$gt", "specifiedAs": {"a": {"$gt": 5}}, "reason": "comparison succeeded", "consideredValue": 7}}`},
		{"$not over several operators is an $and that held", `{"a": {"$not": {"$gt": 5, "$lt": 9}}}`, `{"a": 7}`,
			`{"operatorName": "$not", "details": {"operatorName": "$and", "clausesSatisfied": [
				{"index": 0, "details": {"operatorName": "$gt", "specifiedAs": {"a": {"$gt": 5}}, "reason": "comparison succeeded", "consideredValue": 7}},
				{"index": 1, "details": {"operatorName": "$lt", "specifiedAs": {"a": {"$lt": 9}}, "reason": "comparison succeeded", "consideredValue": 7}}]}}`},
		{"$nor reports the clauses that matched", `{"$nor": [{"a": 1}, {"b": 2}]}`, `{"a": 1, "b": 3}`,
			`{"operatorName": "$nor", "clausesNotSatisfied": [{"index": 0, "details": {"operatorName": "$eq", "specifiedAs": {"a": 1}, "reason": "comparison succeeded", "consideredValue": 1}}]}`},
		{"$and under $nor is satisfied", `{"$nor": [{"$and": [{"a": 1}, {"b": 3}]}]}`, `{"a": 1, "b": 3}`,
			`{"operatorName": "$nor", "clausesNotSatisfied": [{"index": 0, "details": {"operatorName": "$and", "clausesSatisfied": [
				{"index": 0, "details": {"operatorName": "$eq", "specifiedAs": {"a": 1}, "reason": "comparison succeeded", "consideredValue": 1}},
				{"index": 1, "details": {"operatorName": "$eq", "specifiedAs": {"b": 3}, "reason": "comparison succeeded", "consideredValue": 3}}]}}]}`},
		{"type mismatch of an array operator", `{"a": {"$size": 2}}`, `{"a": 5}`,
			`{"operatorName": "$size", "specifiedAs": {"a": {"$size": 2}}, "reason": "type did not match", "consideredType": "int", "expectedType": "array", "consideredValue": 5}`},
		{"$mod expects numbers", `{"a": {"$mod": [2, 0]}}`, `{"a": "x"}`,
			`{"operatorName": "$mod", "specifiedAs": {"a": {"$mod": [2, 0]}}, "reason": "type did not match", "consideredType": "string", "expectedTypes": ["decimal", "double", "int", "long"], "consideredValue": "x"}`},
		{"$type reports the considered type", `{"a": {"$type": "string"}}`, `{"a": 1}`,
			`{"operatorName": "$type", "specifiedAs": {"a": {"$type": "string"}}, "reason": "type did not match", "consideredValue": 1, "consideredType": "int"}`},
		{"$regex is specified by its whole operator document", `{"a": {"$regex": "^x", "$options": "i", "$ne": "y"}}`, `{"a": "b"}`,
			`{"operatorName": "$and", "clausesNotSatisfied": [{"index": 0, "details":
				{"operatorName": "$regex", "specifiedAs": {"a": {"$regex": "^x", "$options": "i", "$ne": "y"}}, "reason": "regular expression did not match", "consideredValue": "b"}}]}`},
		{"$alwaysFalse", `{"$alwaysFalse": 1}`, `{"a": 1}`,
			`{"operatorName": "$alwaysFalse", "specifiedAs": {"$alwaysFalse": 1}, "reason": "expression always evaluates to false"}`},
		{"$expr (jstests doc_validation_error)", `{"$expr": {"$eq": [{"$size": "$a.b"}, {"$size": {"$setUnion": "$a.b"}}]}}`, `{"a": [{"b": 1}, {"b": 1}]}`,
			`{"operatorName": "$expr", "specifiedAs": {"$expr": {"$eq": [{"$size": "$a.b"}, {"$size": {"$setUnion": "$a.b"}}]}}, "reason": "expression did not match", "expressionResult": false}`},
		{"Contacts (jstests doc_validation_error)", `{"$or": [{"phone": {"$type": "string"}}, {"email": {"$regex": {"$regularExpression": {"pattern": "@mongodb\\.com$", "options": ""}}}}, {"status": {"$in": ["Unknown", "Incomplete"]}}]}`,
			`{"email": "info@mongodb.co"}`,
			`{"operatorName": "$or", "clausesNotSatisfied": [
				{"index": 0, "details": {"operatorName": "$type", "specifiedAs": {"phone": {"$type": "string"}}, "reason": "field was missing"}},
				{"index": 1, "details": {"operatorName": "$regex", "specifiedAs": {"email": {"$regex": {"$regularExpression": {"pattern": "@mongodb\\.com$", "options": ""}}}}, "reason": "regular expression did not match", "consideredValue": "info@mongodb.co"}},
				{"index": 2, "details": {"operatorName": "$in", "specifiedAs": {"status": {"$in": ["Unknown", "Incomplete"]}}, "reason": "field was missing"}}]}`},
		{"Node structure (jstests doc_validation_error)", `{"$jsonSchema": {"bsonType": "object", "required": ["_id"], "properties": {
				"parent": {"bsonType": ["string", "null"], "description": "must be a string"},
				"children": {"bsonType": ["array"], "items": {"bsonType": ["string"]}, "minItems": 0, "maxItems": 2, "description": "must be an array of string and max is 2"}}}}`,
			`{"_id": "Languages", "children": 2.0, "parent": "Programming"}`,
			`{"operatorName": "$jsonSchema", "schemaRulesNotSatisfied": [{"operatorName": "properties", "propertiesNotSatisfied": [
				{"propertyName": "children", "description": "must be an array of string and max is 2", "details": [
					{"operatorName": "bsonType", "specifiedAs": {"bsonType": ["array"]}, "reason": "type did not match", "consideredValue": 2.0, "consideredType": "double"}]}]}]}`},
		{"array of enums (jstests doc_validation_error)", `{"$jsonSchema": {"properties": {"values": {"bsonType": "array", "items": {"bsonType": "string", "enum": ["one", "two", "three"]}, "minItems": 1, "uniqueItems": true}}}}`,
			`{"values": ["two", "two"]}`,
			`{"operatorName": "$jsonSchema", "schemaRulesNotSatisfied": [{"operatorName": "properties", "propertiesNotSatisfied": [
				{"propertyName": "values", "details": [{"operatorName": "uniqueItems", "specifiedAs": {"uniqueItems": true}, "reason": "found a duplicate item", "consideredValue": ["two", "two"], "duplicatedValue": "two"}]}]}]}`},
		{"Students (jstests doc_validation_error)", `{"$jsonSchema": {"bsonType": "object", "required": ["name", "year", "major", "address"], "properties": {
				"name": {"bsonType": "string", "description": "must be a string and is required"},
				"year": {"bsonType": "int", "minimum": 2017, "maximum": 3017, "description": "must be an integer in [ 2017, 3017 ] and is required"},
				"major": {"enum": ["Math", "English", "Computer Science", "History", null], "description": "can only be one of the enum values and is required"},
				"gpa": {"bsonType": ["double"], "description": "must be a double if the field exists"},
				"address": {"bsonType": "object", "required": ["city"], "properties": {
					"street": {"bsonType": "string", "description": "must be a string if the field exists"},
					"city": {"bsonType": "string", "description": "must be a string and is required"}}}}}}`,
			`{"year": 2020, "major": "Software Engineering", "gpa": 5.0, "address": {"city": "NYC", "street": 5}}`,
			`{"operatorName": "$jsonSchema", "schemaRulesNotSatisfied": [
				{"operatorName": "properties", "propertiesNotSatisfied": [
					{"propertyName": "major", "description": "can only be one of the enum values and is required", "details": [
						{"operatorName": "enum", "specifiedAs": {"enum": ["Math", "English", "Computer Science", "History", null]}, "reason": "value was not found in enum", "consideredValue": "Software Engineering"}]},
					{"propertyName": "address", "details": [{"operatorName": "properties", "propertiesNotSatisfied": [
						{"propertyName": "street", "description": "must be a string if the field exists", "details": [
							{"operatorName": "bsonType", "specifiedAs": {"bsonType": "string"}, "reason": "type did not match", "consideredValue": 5, "consideredType": "int"}]}]}]}]},
				{"operatorName": "required", "specifiedAs": {"required": ["name", "year", "major", "address"]}, "missingProperties": ["name"]}]}`},
		{"schema keywords of numbers, strings and arrays", `{"$jsonSchema": {"title": "t", "properties": {
				"n": {"minimum": 5, "multipleOf": 2}, "s": {"maxLength": 2, "pattern": "^a"}, "l": {"maxItems": 1, "items": {"bsonType": "int"}}}}}`,
			`{"n": 3, "s": "bcd", "l": [1, "x"]}`,
			`{"operatorName": "$jsonSchema", "title": "t", "schemaRulesNotSatisfied": [{"operatorName": "properties", "propertiesNotSatisfied": [
				{"propertyName": "n", "details": [
					{"operatorName": "multipleOf", "specifiedAs": {"multipleOf": 2}, "reason": "considered value is not a multiple of the specified value", "consideredValue": 3},
					{"operatorName": "minimum", "specifiedAs": {"minimum": 5}, "reason": "comparison failed", "consideredValue": 3}]},
				{"propertyName": "s", "details": [
					{"operatorName": "pattern", "specifiedAs": {"pattern": "^a"}, "reason": "regular expression did not match", "consideredValue": "bcd"},
					{"operatorName": "maxLength", "specifiedAs": {"maxLength": 2}, "reason": "specified string length was not satisfied", "consideredValue": "bcd"}]},
				{"propertyName": "l", "details": [
					{"operatorName": "maxItems", "specifiedAs": {"maxItems": 1}, "reason": "array did not match specified length", "consideredValue": [1, "x"], "numberOfItems": 2},
					{"operatorName": "items", "reason": "At least one item did not match the sub-schema", "itemIndex": 1, "details": [
						{"operatorName": "bsonType", "specifiedAs": {"bsonType": "int"}, "reason": "type did not match", "consideredValue": "x", "consideredType": "string"}]}]}]}]}`},
		{"additionalProperties false and minProperties", `{"$jsonSchema": {"properties": {"a": {}}, "additionalProperties": false, "minProperties": 4}}`,
			`{"a": 1, "b": 2, "c": 3}`,
			`{"operatorName": "$jsonSchema", "schemaRulesNotSatisfied": [
				{"operatorName": "additionalProperties", "specifiedAs": {"additionalProperties": false}, "additionalProperties": ["b", "c"]},
				{"operatorName": "minProperties", "specifiedAs": {"minProperties": 4}, "reason": "specified number of properties was not satisfied", "numberOfProperties": 3}]}`},
		{"a property's type is its last rule", `{"$jsonSchema": {"properties": {"a": {"bsonType": "string", "minimum": 5}}}}`, `{"a": 3}`,
			`{"operatorName": "$jsonSchema", "schemaRulesNotSatisfied": [{"operatorName": "properties", "propertiesNotSatisfied": [{"propertyName": "a", "details": [
				{"operatorName": "minimum", "specifiedAs": {"minimum": 5}, "reason": "comparison failed", "consideredValue": 3},
				{"operatorName": "bsonType", "specifiedAs": {"bsonType": "string"}, "reason": "type did not match", "consideredValue": 3, "consideredType": "int"}]}]}]}`},
		{"exclusive bounds", `{"$jsonSchema": {"properties": {"a": {"minimum": 5, "exclusiveMinimum": true}, "b": {"maximum": 1, "exclusiveMaximum": false}}}}`, `{"a": 5, "b": 2}`,
			`{"operatorName": "$jsonSchema", "schemaRulesNotSatisfied": [{"operatorName": "properties", "propertiesNotSatisfied": [
				{"propertyName": "a", "details": [{"operatorName": "minimum", "specifiedAs": {"minimum": 5, "exclusiveMinimum": true}, "reason": "comparison failed", "consideredValue": 5}]},
				{"propertyName": "b", "details": [{"operatorName": "maximum", "specifiedAs": {"maximum": 1}, "reason": "comparison failed", "consideredValue": 2}]}]}]}`},
		{"a top-level schema that excludes objects", `{"$jsonSchema": {"bsonType": "array"}}`, `{"a": 1}`,
			`{"operatorName": "$jsonSchema", "specifiedAs": {"$jsonSchema": {"bsonType": "array"}}, "reason": "expression always evaluates to false"}`},
		{"anyOf and dependencies", `{"$jsonSchema": {"anyOf": [{"required": ["x"]}, {"required": ["y"]}], "dependencies": {"a": ["b"]}}}`,
			`{"a": 1}`,
			`{"operatorName": "$jsonSchema", "schemaRulesNotSatisfied": [
				{"operatorName": "dependencies", "failingDependencies": [{"conditionalProperty": "a", "missingProperties": ["b"]}]},
				{"operatorName": "anyOf", "schemasNotSatisfied": [
					{"index": 0, "details": [{"operatorName": "required", "specifiedAs": {"required": ["x"]}, "missingProperties": ["x"]}]},
					{"index": 1, "details": [{"operatorName": "required", "specifiedAs": {"required": ["y"]}, "missingProperties": ["y"]}]}]}]}`},
		{"$jsonSchema under $nor", `{"$nor": [{"$jsonSchema": {"title": "t", "required": ["a"]}}]}`, `{"a": 1}`,
			`{"operatorName": "$nor", "clausesNotSatisfied": [{"index": 0, "details": {"operatorName": "$jsonSchema", "reason": "schema matched"}}]}`},
		{"a matching document explains nothing", `{"a": 1}`, `{"a": 1}`, `{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := bson.Raw(mustParse(t, tc.filter).Explain(doc(t, tc.filter), doc(t, tc.doc))).String()
			if want := bson.Raw(doc(t, tc.want)).String(); got != want {
				t.Errorf("Explain\n got %s\nwant %s", got, want)
			}
		})
	}
}

// TestExplainExprError: an $expr that fails to evaluate is explained by its
// error (MongoDB serializes the exception: code, codeName, errmsg). The
// code itself is $divide's business, so only its presence is checked.
func TestExplainExprError(t *testing.T) {
	filter := `{"$expr": {"$divide": [1, "$z"]}}`
	got := bson.Raw(mustParse(t, filter).Explain(doc(t, filter), doc(t, `{"z": 0}`)))
	if r := got.Lookup("reason").StringValue(); r != "failed to evaluate aggregation expression" {
		t.Errorf("reason %q in %s", r, got)
	}
	details, ok := got.Lookup("details").DocumentOK()
	if !ok || details.Lookup("code").Int32() == 0 || details.Lookup("errmsg").StringValue() == "" {
		t.Errorf("details %s, want the evaluation error's code and errmsg", got)
	}
}
