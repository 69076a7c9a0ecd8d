package commands

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestEnforcesPrepare checks MongoDB 7.0's rule for which commands wait on
// prepare conflicts: the reads of writes and snapshot, linearizable and
// afterClusterTime reads wait; local, majority and available reads read
// past a prepared transaction.
func TestEnforcesPrepare(t *testing.T) {
	level := func(l string) bson.D { return bson.D{{Key: "level", Value: l}} }
	after := bson.E{Key: "afterClusterTime", Value: bson.Timestamp{T: 1}}
	for _, tc := range []struct {
		name        string
		readConcern bson.D // nil: none
		writes      bool
		want        bool
	}{
		{"no readConcern", nil, false, false},
		{"local", level("local"), false, false},
		{"majority", level("majority"), false, false},
		{"available", level("available"), false, false},
		{"snapshot", level("snapshot"), false, true},
		{"linearizable", level("linearizable"), false, true},
		{"afterClusterTime", append(level("local"), after), false, true},
		{"afterClusterTime alone", bson.D{after}, false, true},
		{"a write", nil, true, true},
		{"a write with local", level("local"), true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := bson.D{{Key: "find", Value: "c"}}
			if tc.readConcern != nil {
				body = append(body, bson.E{Key: "readConcern", Value: tc.readConcern})
			}
			raw, err := bson.Marshal(body)
			if err != nil {
				t.Fatal(err)
			}
			req := &Request{DB: "test", Name: "find", Body: bsoncore.Document(raw)}
			if got := enforcesPrepare(req, tc.writes); got != tc.want {
				t.Fatalf("enforcesPrepare = %v, want %v", got, tc.want)
			}
		})
	}
}
