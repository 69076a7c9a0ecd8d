package commands

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/hlc"
)

// TestEmptyTimestamps checks MongoDB's rule for inserted documents: a
// top-level Timestamp(0, 0) is replaced by the current time, and nothing
// else is (a nested one, a Timestamp with either half set), and that
// hasEmptyTimestamp finds exactly those documents.
func TestEmptyTimestamps(t *testing.T) {
	now := hlc.New(77, 5)
	for _, c := range []struct {
		name string
		doc  bson.D
		want bool
	}{
		{"no timestamp", bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: "x"}}, false},
		{"top-level Timestamp(0, 0)", bson.D{{Key: "_id", Value: 1}, {Key: "ts", Value: bson.Timestamp{}}}, true},
		{"first field", bson.D{{Key: "ts", Value: bson.Timestamp{}}, {Key: "_id", Value: 1}}, true},
		{"after a nested document", bson.D{{Key: "_id", Value: 1}, {Key: "d", Value: bson.D{{Key: "x", Value: 1.5}}}, {Key: "ts", Value: bson.Timestamp{}}}, true},
		{"increment set", bson.D{{Key: "_id", Value: 1}, {Key: "ts", Value: bson.Timestamp{I: 1}}}, false},
		{"time set", bson.D{{Key: "_id", Value: 1}, {Key: "ts", Value: bson.Timestamp{T: 1}}}, false},
		{"nested Timestamp(0, 0) is kept", bson.D{{Key: "_id", Value: 1}, {Key: "d", Value: bson.D{{Key: "ts", Value: bson.Timestamp{}}}}}, false},
		{"in an array is kept", bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: bson.A{bson.Timestamp{}}}}, false},
		{"zero int64 is not a timestamp", bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: int64(0)}}, false},
	} {
		doc, err := bson.Marshal(c.doc)
		if err != nil {
			t.Fatal(err)
		}
		if got := hasEmptyTimestamp(doc); got != c.want {
			t.Errorf("%s: hasEmptyTimestamp = %v, want %v", c.name, got, c.want)
		}
		out := fillEmptyTimestamps([]bsoncore.Document{doc}, func() hlc.Timestamp { return now })
		filled := 0
		elems, _ := out[0].Elements()
		for _, el := range elems {
			if tt, ii, ok := el.Value().TimestampOK(); ok && tt == now.T() && ii == now.I() {
				filled++
			}
		}
		if want := map[bool]int{true: 1}[c.want]; filled != want {
			t.Errorf("%s: %d timestamps filled, want %d: %s", c.name, filled, want, bson.Raw(out[0]))
		}
	}
	// A malformed element ends the walk: nothing after it is looked at.
	bad := bsoncore.NewDocumentBuilder().AppendInt32("a", 1).AppendTimestamp("ts", 0, 0).Build()
	bad[4] = 0x7f // an unknown type where "a" was
	if hasEmptyTimestamp(bad) {
		t.Error("a document whose first element does not frame was found to hold an empty timestamp")
	}
}
