package bsonx

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestShellString(t *testing.T) {
	oid, _ := bson.ObjectIDFromHex("5f1d7a3e8f1b2c3d4e5f6a7b")
	for _, tc := range []struct {
		doc  bson.D
		want string
	}{
		{bson.D{{"_id", int32(1)}}, "{ _id: 1 }"},
		{bson.D{{"_id", int64(-7)}}, "{ _id: -7 }"},
		{bson.D{{"_id", 1.0}}, "{ _id: 1.0 }"},
		{bson.D{{"_id", 1.5}}, "{ _id: 1.5 }"},
		{bson.D{{"_id", "a\"b"}}, `{ _id: "a\"b" }`},
		{bson.D{{"_id", oid}}, "{ _id: ObjectId('5f1d7a3e8f1b2c3d4e5f6a7b') }"},
		{bson.D{{"a", int32(1)}, {"b", "x"}}, `{ a: 1, b: "x" }`},
		{bson.D{{"a", bson.D{{"b", true}}}}, "{ a: { b: true } }"},
		{bson.D{{"a", bson.A{int32(1), nil}}}, "{ a: [ 1, null ] }"},
		{bson.D{{"a", bson.A{}}}, "{ a: [] }"},
		{bson.D{{"a", bson.D{}}}, "{ a: {} }"},
		{bson.D{{"a", bson.DateTime(time.UnixMilli(1000).UnixMilli())}}, "{ a: new Date(1000) }"},
		{bson.D{}, "{}"},
	} {
		raw, err := bson.Marshal(tc.doc)
		if err != nil {
			t.Fatal(err)
		}
		if got := ShellString(raw); got != tc.want {
			t.Errorf("ShellString(%v) = %s, want %s", tc.doc, got, tc.want)
		}
	}
}
