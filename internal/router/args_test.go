package router

import (
	"bytes"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestRequestArgMatchesLookup: request.arg, which reads hotArgs from an
// index built in one pass, answers as the body's Lookup does — every hot
// and other name, present or not, the first of duplicates — and indexes
// again when the request's body is replaced (a snapshot read's copy).
func TestRequestArgMatchesLookup(t *testing.T) {
	doc := func(d bson.D) bsoncore.Document {
		b, err := bson.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := []struct {
		name string
		body bsoncore.Document
	}{
		{"a routed find", doc(bson.D{{"find", "c"}, {"filter", bson.D{{"_id", "k"}}}, {"limit", int64(1)}, {"singleBatch", true},
			{"lsid", bson.D{{"id", bson.Binary{Subtype: 4, Data: make([]byte, 16)}}}}, {"$db", "d"}})},
		{"an update", doc(bson.D{{"update", "c"}, {"ordered", false}, {"txnNumber", int64(3)}, {"$db", "d"}})},
		{"duplicates: the first counts", doc(bson.D{{"find", "c"}, {"limit", int32(2)}, {"limit", int32(9)}, {"$db", "a"}, {"$db", "b"}})},
		{"no fields but the command", doc(bson.D{{"ping", 1}})},
		{"empty", doc(bson.D{})},
	}
	names := []string{"find", "update", "ping", "comment", "maxTimeMS", "nope", "", "$d", "limits", "Limit"}
	for n := range hotArgs {
		names = append(names, n)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := &request{body: tc.body}
			check := func(req *request) {
				t.Helper()
				for _, n := range names {
					got, gotOK := req.arg(n)
					want, err := req.body.LookupErr(n)
					if gotOK != (err == nil) || gotOK && !got.Equal(want) {
						t.Errorf("arg(%q) = %v, %v; Lookup gives %v, %v", n, got, gotOK, want, err)
					}
				}
			}
			check(req)
			check(req) // from the index built by the first
			q := *req
			q.body = doc(bson.D{{"find", "other"}, {"limit", int64(7)}, {"readConcern", bson.D{{"level", "snapshot"}}}})
			check(&q)
			check(req) // the original still answers for its own body
		})
	}
	if len(hotArgs) != numHotArgs {
		t.Fatalf("hotArgs has %d names, numHotArgs is %d", len(hotArgs), numHotArgs)
	}
	seen := map[int]bool{}
	for n, i := range hotArgs {
		if hotArg(n) != i {
			t.Errorf("hotArg(%q) = %d, hotArgs says %d", n, hotArg(n), i)
		}
		if i < 0 || i >= numHotArgs || seen[i] {
			t.Errorf("hotArgs[%q] = %d: out of range or taken twice", n, i)
		}
		seen[i] = true
	}
}

// TestAppendStmtIDs: the stmtIds a retryable write's batch carries are
// an array of int32 positions keyed "0", "1", … as a builder makes it.
func TestAppendStmtIDs(t *testing.T) {
	for _, index := range [][]int{{0}, {3}, {0, 1, 2}, {7, 12, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49}} {
		idx, got := bsoncore.AppendDocumentStart(nil)
		got = appendStmtIDs(got, index)
		got, _ = bsoncore.AppendDocumentEnd(got, idx)
		arr := bsoncore.NewArrayBuilder()
		for _, i := range index {
			arr.AppendInt32(int32(i))
		}
		want := bsoncore.NewDocumentBuilder().AppendArray("stmtIds", arr.Build()).Build()
		if !bytes.Equal(got, want) {
			t.Errorf("index %v: got %v, want %v", index, bsoncore.Document(got), want)
		}
	}
}
