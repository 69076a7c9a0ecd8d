package bsonx

import (
	"bytes"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestFields: a document taken apart and rebuilt is the same document;
// SetField replaces in place, appends, and removes with an absent value;
// a malformed document ends its field list instead of panicking.
func TestFields(t *testing.T) {
	raw, _ := bson.Marshal(bson.D{{Key: "a", Value: 1}, {Key: "b", Value: "x"}, {Key: "c", Value: bson.A{1, 2}}})
	v := bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: raw}
	fs := FieldsOf(v)
	if got := BuildDoc(fs); string(got) != string(raw) {
		t.Fatalf("rebuilt %s, want %s", bson.Raw(got), bson.Raw(raw))
	}
	fs = SetField(fs, "b", bsoncore.Value{})                                                   // remove
	fs = SetField(fs, "a", bsoncore.Value{Type: bsoncore.TypeInt32, Data: []byte{7, 0, 0, 0}}) // replace
	fs = SetField(fs, "d", bsoncore.Value{Type: bsoncore.TypeBoolean, Data: []byte{1}})        // append
	want, _ := bson.Marshal(bson.D{{Key: "a", Value: 7}, {Key: "c", Value: bson.A{1, 2}}, {Key: "d", Value: true}})
	if got := BuildDoc(fs); string(got) != string(want) {
		t.Fatalf("after SetField %s, want %s", bson.Raw(got), bson.Raw(want))
	}
	if GetField(fs, "b").Type != 0 || GetField(fs, "a").Int32() != 7 {
		t.Fatalf("GetField: b %v, a %v", GetField(fs, "b"), GetField(fs, "a"))
	}
	arr := BuildArray([]bsoncore.Value{GetField(fs, "a"), {}, GetField(fs, "d")})
	wantArr, _ := bson.Marshal(bson.D{{Key: "0", Value: 7}, {Key: "1", Value: true}})
	if string(arr.Data) != string(wantArr) {
		t.Fatalf("BuildArray %s, want %s (absent values skipped, keys renumbered)", bson.Raw(arr.Data), bson.Raw(wantArr))
	}
	bad := append([]byte(nil), raw...)
	bad[bytes.Index(bad, []byte("c\x00"))-1] = 0x55 // element c gets a type BSON does not have
	if got := FieldsOf(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: bad}); len(got) > 2 {
		t.Fatalf("malformed document gave %d fields", len(got))
	}
	if FieldsOf(bsoncore.Value{Type: bsoncore.TypeString}) != nil {
		t.Fatal("a string has fields")
	}
}
