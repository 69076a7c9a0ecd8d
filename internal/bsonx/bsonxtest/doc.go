package bsonxtest

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// ExtDoc parses a document written in extended JSON, failing t on error.
func ExtDoc(t testing.TB, extJSON string) bsoncore.Document {
	t.Helper()
	var d bson.D
	if err := bson.UnmarshalExtJSON([]byte(extJSON), false, &d); err != nil {
		t.Fatalf("%s: %v", extJSON, err)
	}
	return Marshal(t, d)
}

// Marshal encodes v (a bson.D, a map, a struct) as a document, failing t
// on error.
func Marshal(t testing.TB, v any) bsoncore.Document {
	t.Helper()
	b, err := bson.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
