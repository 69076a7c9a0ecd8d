package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/commands"
	"github.com/cairndb/cairn/internal/query/querytest"
)

// validationCase is one write against collection "c" whose validator
// (created with options) is {a: {$gte: 0}} unless the case says otherwise.
// Collection c starts with {_id: 1, a: 1} (valid) and {_id: 2, a: -1}
// (invalid, stored before the validator existed); "src" holds sources for
// $out and $merge.
type validationCase struct {
	name    string
	options string   // create options; "" is the default validator
	collMod []string // collMod commands run after the seed
	src     []string // documents of collection src
	cmd     string   // the command (Extended JSON)
	code    int      // the command's error code, 0 for ok
	werrs   []int    // indexes of statements failing with 121
	want    []string // collection c afterwards, by _id
}

const (
	seedValid   = `{"_id": 1, "a": 1}`
	seedInvalid = `{"_id": 2, "a": -1}`
)

var validationCases = []validationCase{
	// insert × level × action, ordered and not, bypass.
	{name: "insert strict error ordered", cmd: `{"insert": "c", "documents": [{"_id": 3, "a": 5}, {"_id": 4, "a": -5}, {"_id": 5, "a": 6}]}`,
		werrs: []int{1}, want: []string{seedValid, seedInvalid, `{"_id": 3, "a": 5}`}},
	{name: "insert strict error unordered", cmd: `{"insert": "c", "ordered": false, "documents": [{"_id": 3, "a": 5}, {"_id": 4, "a": -5}, {"_id": 5, "a": 6}, {"_id": 6}]}`,
		werrs: []int{1, 3}, want: []string{seedValid, seedInvalid, `{"_id": 3, "a": 5}`, `{"_id": 5, "a": 6}`}},
	{name: "insert moderate still checked", options: `{"validator": {"a": {"$gte": 0}}, "validationLevel": "moderate"}`,
		cmd: `{"insert": "c", "documents": [{"_id": 4, "a": -5}]}`, werrs: []int{0}, want: []string{seedValid, seedInvalid}},
	{name: "insert level off", options: `{"validator": {"a": {"$gte": 0}}, "validationLevel": "off"}`,
		cmd: `{"insert": "c", "documents": [{"_id": 4, "a": -5}]}`, want: []string{seedValid, seedInvalid, `{"_id": 4, "a": -5}`}},
	{name: "insert action warn", options: `{"validator": {"a": {"$gte": 0}}, "validationAction": "warn"}`,
		cmd: `{"insert": "c", "documents": [{"_id": 4, "a": -5}]}`, want: []string{seedValid, seedInvalid, `{"_id": 4, "a": -5}`}},
	{name: "insert bypass", cmd: `{"insert": "c", "bypassDocumentValidation": true, "documents": [{"_id": 4, "a": -5}]}`,
		want: []string{seedValid, seedInvalid, `{"_id": 4, "a": -5}`}},
	{name: "insert bypass false", cmd: `{"insert": "c", "bypassDocumentValidation": false, "documents": [{"_id": 4, "a": -5}]}`,
		werrs: []int{0}, want: []string{seedValid, seedInvalid}},
	{name: "insert jsonSchema", options: `{"validator": {"$jsonSchema": {"required": ["a"], "properties": {"a": {"bsonType": "int"}}}}}`,
		cmd:   `{"insert": "c", "documents": [{"_id": 3, "a": {"$numberInt": "3"}}, {"_id": 4, "a": "x"}, {"_id": 5}]}`,
		werrs: []int{1}, want: []string{seedValid, seedInvalid, `{"_id": 3, "a": 3}`}},

	// updates: operator, replacement, pipeline, upsert, multi.
	{name: "update operator strict", cmd: `{"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"a": -3}}}]}`,
		werrs: []int{0}, want: []string{seedValid, seedInvalid}},
	{name: "update replacement strict", cmd: `{"update": "c", "updates": [{"q": {"_id": 1}, "u": {"a": -3}}]}`,
		werrs: []int{0}, want: []string{seedValid, seedInvalid}},
	{name: "update pipeline strict", cmd: `{"update": "c", "updates": [{"q": {"_id": 1}, "u": [{"$set": {"a": -3}}]}]}`,
		werrs: []int{0}, want: []string{seedValid, seedInvalid}},
	{name: "update valid result", cmd: `{"update": "c", "updates": [{"q": {"_id": 2}, "u": {"$set": {"a": 7}}}]}`,
		want: []string{seedValid, `{"_id": 2, "a": 7}`}},
	{name: "update strict invalid to invalid", cmd: `{"update": "c", "updates": [{"q": {"_id": 2}, "u": {"$set": {"a": -7}}}]}`,
		werrs: []int{0}, want: []string{seedValid, seedInvalid}},
	{name: "update no-op of an invalid document", cmd: `{"update": "c", "updates": [{"q": {"_id": 2}, "u": {"$set": {"a": -1}}}]}`,
		want: []string{seedValid, seedInvalid}},
	{name: "update moderate invalid to invalid", options: `{"validator": {"a": {"$gte": 0}}, "validationLevel": "moderate"}`,
		cmd: `{"update": "c", "updates": [{"q": {"_id": 2}, "u": {"$set": {"a": -7}}}]}`, want: []string{seedValid, `{"_id": 2, "a": -7}`}},
	{name: "update moderate valid to invalid", options: `{"validator": {"a": {"$gte": 0}}, "validationLevel": "moderate"}`,
		cmd: `{"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"a": -7}}}]}`, werrs: []int{0}, want: []string{seedValid, seedInvalid}},
	{name: "update off", options: `{"validator": {"a": {"$gte": 0}}, "validationLevel": "off"}`,
		cmd: `{"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"a": -7}}}]}`, want: []string{`{"_id": 1, "a": -7}`, seedInvalid}},
	{name: "update warn", options: `{"validator": {"a": {"$gte": 0}}, "validationAction": "warn"}`,
		cmd: `{"update": "c", "updates": [{"q": {"_id": 1}, "u": {"a": -7}}]}`, want: []string{`{"_id": 1, "a": -7}`, seedInvalid}},
	{name: "update bypass", cmd: `{"update": "c", "bypassDocumentValidation": true, "updates": [{"q": {"_id": 1}, "u": [{"$set": {"a": -7}}]}]}`,
		want: []string{`{"_id": 1, "a": -7}`, seedInvalid}},
	// A multi update is not atomic (as in MongoDB): the documents before
	// the failing one stay updated, the statements after it do not run.
	{name: "update multi stops at the failing document", cmd: `{"update": "c", "updates": [{"q": {}, "u": {"$inc": {"a": -1}}, "multi": true}, {"q": {"_id": 1}, "u": {"$set": {"b": 1}}}]}`,
		werrs: []int{0}, want: []string{`{"_id": 1, "a": 0}`, seedInvalid}},
	{name: "update unordered statements", cmd: `{"update": "c", "ordered": false, "updates": [{"q": {"_id": 1}, "u": {"$set": {"a": -1}}}, {"q": {"_id": 1}, "u": {"$set": {"b": 1}}}]}`,
		werrs: []int{0}, want: []string{`{"_id": 1, "a": 1, "b": 1}`, seedInvalid}},
	{name: "upsert strict", cmd: `{"update": "c", "updates": [{"q": {"_id": 9}, "u": {"$set": {"a": -1}}, "upsert": true}]}`,
		werrs: []int{0}, want: []string{seedValid, seedInvalid}},
	{name: "upsert moderate", options: `{"validator": {"a": {"$gte": 0}}, "validationLevel": "moderate"}`,
		cmd: `{"update": "c", "updates": [{"q": {"_id": 9}, "u": {"$set": {"a": -1}}, "upsert": true}]}`, werrs: []int{0}, want: []string{seedValid, seedInvalid}},
	{name: "upsert bypass", cmd: `{"update": "c", "bypassDocumentValidation": true, "updates": [{"q": {"_id": 9}, "u": {"$set": {"a": -1}}, "upsert": true}]}`,
		want: []string{seedValid, seedInvalid, `{"_id": 9, "a": -1}`}},

	// findAndModify.
	{name: "findAndModify strict", cmd: `{"findAndModify": "c", "query": {"_id": 1}, "update": {"$set": {"a": -2}}}`,
		code: 121, want: []string{seedValid, seedInvalid}},
	{name: "findAndModify replacement", cmd: `{"findAndModify": "c", "query": {"_id": 1}, "update": {"a": -2}}`,
		code: 121, want: []string{seedValid, seedInvalid}},
	{name: "findAndModify upsert", cmd: `{"findAndModify": "c", "query": {"_id": 8}, "update": {"$set": {"a": -2}}, "upsert": true}`,
		code: 121, want: []string{seedValid, seedInvalid}},
	{name: "findAndModify bypass", cmd: `{"findAndModify": "c", "query": {"_id": 1}, "update": {"$set": {"a": -2}}, "bypassDocumentValidation": true}`,
		want: []string{`{"_id": 1, "a": -2}`, seedInvalid}},
	{name: "findAndModify warn", options: `{"validator": {"a": {"$gte": 0}}, "validationAction": "warn"}`,
		cmd: `{"findAndModify": "c", "query": {"_id": 1}, "update": {"$set": {"a": -2}}}`, want: []string{`{"_id": 1, "a": -2}`, seedInvalid}},
	{name: "findAndModify remove is not validated", cmd: `{"findAndModify": "c", "query": {"_id": 2}, "remove": true}`,
		want: []string{seedValid}},

	// $out and $merge write under the target's rules.
	{name: "$out strict", src: []string{`{"_id": 7, "a": 3}`, `{"_id": 8, "a": -3}`}, cmd: `{"aggregate": "src", "pipeline": [{"$out": "c"}], "cursor": {}}`,
		code: 121, want: []string{seedValid, seedInvalid}},
	{name: "$out bypass", src: []string{`{"_id": 7, "a": 3}`, `{"_id": 8, "a": -3}`}, cmd: `{"aggregate": "src", "pipeline": [{"$out": "c"}], "cursor": {}, "bypassDocumentValidation": true}`,
		want: []string{`{"_id": 7, "a": 3}`, `{"_id": 8, "a": -3}`}},
	{name: "$merge strict", src: []string{`{"_id": 7, "a": 3}`, `{"_id": 8, "a": -3}`}, cmd: `{"aggregate": "src", "pipeline": [{"$merge": "c"}], "cursor": {}}`,
		code: 121, want: []string{seedValid, seedInvalid, `{"_id": 7, "a": 3}`}},
	{name: "$merge replace into an existing document", src: []string{`{"_id": 1, "a": -3}`}, cmd: `{"aggregate": "src", "pipeline": [{"$merge": {"into": "c", "whenMatched": "replace"}}], "cursor": {}}`,
		code: 121, want: []string{seedValid, seedInvalid}},
	{name: "$merge bypass", src: []string{`{"_id": 1, "a": -3}`}, cmd: `{"aggregate": "src", "pipeline": [{"$merge": {"into": "c", "whenMatched": "merge"}}], "cursor": {}, "bypassDocumentValidation": true}`,
		want: []string{`{"_id": 1, "a": -3}`, seedInvalid}},

	{name: "$out level off", options: `{"validator": {"a": {"$gte": 0}}, "validationLevel": "off"}`, src: []string{`{"_id": 8, "a": -3}`},
		cmd: `{"aggregate": "src", "pipeline": [{"$out": "c"}], "cursor": {}}`, want: []string{`{"_id": 8, "a": -3}`}},
	{name: "$merge warn", options: `{"validator": {"a": {"$gte": 0}}, "validationAction": "warn"}`, src: []string{`{"_id": 8, "a": -3}`},
		cmd: `{"aggregate": "src", "pipeline": [{"$merge": "c"}], "cursor": {}}`, want: []string{seedValid, seedInvalid, `{"_id": 8, "a": -3}`}},
	{name: "$merge moderate updates an invalid document", options: `{"validator": {"a": {"$gte": 0}}, "validationLevel": "moderate"}`, src: []string{`{"_id": 2, "b": 1}`},
		cmd: `{"aggregate": "src", "pipeline": [{"$merge": {"into": "c", "whenMatched": "merge"}}], "cursor": {}}`, want: []string{seedValid, `{"_id": 2, "a": -1, "b": 1}`}},
	{name: "findAndModify moderate invalid to invalid", options: `{"validator": {"a": {"$gte": 0}}, "validationLevel": "moderate"}`,
		cmd: `{"findAndModify": "c", "query": {"_id": 2}, "update": {"$inc": {"a": -1}}}`, want: []string{seedValid, `{"_id": 2, "a": -2}`}},
	{name: "findAndModify level off", options: `{"validator": {"a": {"$gte": 0}}, "validationLevel": "off"}`,
		cmd: `{"findAndModify": "c", "query": {"_id": 1}, "update": {"a": -1}}`, want: []string{`{"_id": 1, "a": -1}`, seedInvalid}},
	{name: "upsert warn", options: `{"validator": {"a": {"$gte": 0}}, "validationAction": "warn"}`,
		cmd: `{"update": "c", "updates": [{"q": {"_id": 9}, "u": {"$set": {"a": -1}}, "upsert": true}]}`, want: []string{seedValid, seedInvalid, `{"_id": 9, "a": -1}`}},
	{name: "insert moderate warn", options: `{"validator": {"a": {"$gte": 0}}, "validationLevel": "moderate", "validationAction": "warn"}`,
		cmd: `{"insert": "c", "documents": [{"_id": 4, "a": -5}]}`, want: []string{seedValid, seedInvalid, `{"_id": 4, "a": -5}`}},

	// collMod changes the rules for the writes after it.
	{name: "collMod adds a validator", options: `{}`, collMod: []string{`{"collMod": "c", "validator": {"b": {"$exists": true}}}`},
		cmd: `{"insert": "c", "documents": [{"_id": 3, "a": 1}, {"_id": 4, "b": 1}]}`, werrs: []int{0}, want: []string{seedValid, seedInvalid}},
	{name: "collMod to warn", collMod: []string{`{"collMod": "c", "validationAction": "warn"}`},
		cmd: `{"insert": "c", "documents": [{"_id": 3, "a": -1}]}`, want: []string{seedValid, seedInvalid, `{"_id": 3, "a": -1}`}},
	{name: "collMod to off then strict", collMod: []string{`{"collMod": "c", "validationLevel": "off"}`, `{"collMod": "c", "validationLevel": "strict"}`},
		cmd: `{"insert": "c", "documents": [{"_id": 3, "a": -1}]}`, werrs: []int{0}, want: []string{seedValid, seedInvalid}},
	{name: "collMod to moderate", collMod: []string{`{"collMod": "c", "validationLevel": "moderate"}`},
		cmd: `{"update": "c", "updates": [{"q": {"_id": 2}, "u": {"$set": {"b": 1}}}]}`, want: []string{seedValid, `{"_id": 2, "a": -1, "b": 1}`}},
	{name: "collMod empty validator removes it", collMod: []string{`{"collMod": "c", "validator": {}}`},
		cmd: `{"insert": "c", "documents": [{"_id": 3, "a": -1}]}`, want: []string{seedValid, seedInvalid, `{"_id": 3, "a": -1}`}},
	{name: "collMod replaces the validator", collMod: []string{`{"collMod": "c", "validator": {"a": {"$lt": 0}}}`},
		cmd: `{"insert": "c", "documents": [{"_id": 3, "a": -1}, {"_id": 4, "a": 1}]}`, werrs: []int{1}, want: []string{seedValid, seedInvalid, `{"_id": 3, "a": -1}`}},
}

// TestValidationWritePaths runs every write path against every level and
// action over the wire, and checks what the collection holds afterwards.
func TestValidationWritePaths(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	for i, tc := range validationCases {
		t.Run(tc.name, func(t *testing.T) {
			db := c.Database(fmt.Sprintf("val%d", i))
			opts := tc.options
			if opts == "" {
				opts = `{"validator": {"a": {"$gte": 0}}}`
			}
			create := append(bson.D{{Key: "create", Value: "c"}}, mustJSON(t, opts)...)
			if err := db.RunCommand(ctx, create).Err(); err != nil {
				t.Fatal(err)
			}
			seed := bson.D{{Key: "insert", Value: "c"}, {Key: "bypassDocumentValidation", Value: true},
				{Key: "documents", Value: bson.A{mustJSON(t, seedValid), mustJSON(t, seedInvalid)}}}
			if err := db.RunCommand(ctx, seed).Err(); err != nil {
				t.Fatal(err)
			}
			mustInsertJSON(t, db.Collection("src"), tc.src)
			for _, cm := range tc.collMod {
				if err := db.RunCommand(ctx, mustJSON(t, cm)).Err(); err != nil {
					t.Fatalf("%s: %v", cm, err)
				}
			}
			reply, err := db.RunCommand(ctx, mustJSON(t, tc.cmd)).Raw()
			var we mongo.WriteException
			if errors.As(err, &we) {
				err = nil // write errors are checked below, from the reply
			}
			checkCommandCode(t, err, tc.code)
			if tc.code == 0 {
				if got := writeErrorIndexes(t, reply); !slices.Equal(got, tc.werrs) {
					t.Errorf("write errors at %v, want %v (reply %s)", got, tc.werrs, reply)
				}
			}
			want := make([]string, len(tc.want))
			for i, w := range tc.want {
				want[i] = canonicalJSON(t, w)
			}
			if got := readSortedJSON(t, db.Collection("c")); !slices.Equal(got, want) {
				t.Errorf("collection holds\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
		})
	}
}

// checkCommandCode asserts a command's outcome: ok for 0, else the code.
func checkCommandCode(t *testing.T, err error, code int) {
	t.Helper()
	if code == 0 {
		if err != nil {
			t.Fatalf("command failed: %v", err)
		}
		return
	}
	var ce mongo.CommandError
	if !errors.As(err, &ce) || int(ce.Code) != code {
		t.Fatalf("command error %v, want code %d", err, code)
	}
}

// writeErrorIndexes lists the indexes of a reply's write errors, checking
// each is DocumentValidationFailure with an errInfo.
func writeErrorIndexes(t *testing.T, reply bson.Raw) []int {
	t.Helper()
	var out []int
	arr, ok := reply.Lookup("writeErrors").ArrayOK()
	if !ok {
		return nil
	}
	vals, _ := arr.Values()
	for _, v := range vals {
		we := v.Document()
		if code := we.Lookup("code").Int32(); code != 121 {
			t.Errorf("write error %s: code %d, want 121", we, code)
		}
		if _, ok := we.Lookup("errInfo").DocumentOK(); !ok {
			t.Errorf("write error %s has no errInfo", we)
		}
		out = append(out, int(we.Lookup("index").Int32()))
	}
	return out
}

// TestValidationErrInfo checks the shape of the error a failing document
// gets over the wire: a write error {index, code: 121, errInfo:
// {failingDocumentId, details}, errmsg: "Document failed validation"} for
// insert and update, and a command error with errInfo for findAndModify.
func TestValidationErrInfo(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	db := c.Database("errinfo")
	if err := db.RunCommand(ctx, mustJSON(t, `{"create": "c", "validator": {"$jsonSchema": {"required": ["name"], "properties": {"age": {"bsonType": "int", "minimum": 0}}}}}`)).Err(); err != nil {
		t.Fatal(err)
	}
	details := `{"operatorName": "$jsonSchema", "schemaRulesNotSatisfied": [
		{"operatorName": "properties", "propertiesNotSatisfied": [{"propertyName": "age", "details": [
			{"operatorName": "minimum", "specifiedAs": {"minimum": 0}, "reason": "comparison failed", "consideredValue": -4}]}]},
		{"operatorName": "required", "specifiedAs": {"required": ["name"]}, "missingProperties": ["name"]}]}`
	wantErrInfo := canonicalJSON(t, `{"failingDocumentId": 7, "details": `+details+`}`)

	reply, err := db.RunCommand(ctx, mustJSON(t, `{"insert": "c", "documents": [{"_id": 6, "name": "x"}, {"_id": 7, "age": -4}]}`)).Raw()
	var we mongo.WriteException
	if !errors.As(err, &we) {
		t.Fatalf("insert: %v, want write errors", err)
	}
	werrs := reply.Lookup("writeErrors").Array()
	first := werrs.Index(0).Document()
	var keys []string
	elems, _ := first.Elements()
	for _, e := range elems {
		keys = append(keys, e.Key())
	}
	if strings.Join(keys, ",") != "index,code,errInfo,errmsg" {
		t.Errorf("write error fields %v, want index, code, errInfo, errmsg", keys)
	}
	if got := first.Lookup("errInfo").Document().String(); got != wantErrInfo {
		t.Errorf("insert errInfo\n got %s\nwant %s", got, wantErrInfo)
	}
	if msg := first.Lookup("errmsg").StringValue(); msg != "Document failed validation" {
		t.Errorf("errmsg %q", msg)
	}
	if n := reply.Lookup("n").Int32(); n != 1 {
		t.Errorf("n = %d, want 1 (the valid first document)", n)
	}

	reply, err = db.RunCommand(ctx, mustJSON(t, `{"update": "c", "updates": [{"q": {"_id": 6}, "u": {"$set": {"age": -4}, "$unset": {"name": 1}}}]}`)).Raw()
	if !errors.As(err, &we) {
		t.Fatalf("update: %v, want write errors", err)
	}
	wantUpdate := canonicalJSON(t, `{"failingDocumentId": 6, "details": `+details+`}`)
	if got := reply.Lookup("writeErrors").Array().Index(0).Document().Lookup("errInfo").Document().String(); got != wantUpdate {
		t.Errorf("update errInfo\n got %s\nwant %s", got, wantUpdate)
	}

	raw, err := db.RunCommand(ctx, mustJSON(t, `{"findAndModify": "c", "query": {"_id": 6}, "update": {"$set": {"age": {"$numberInt": "-4"}}, "$unset": {"name": 1}}}`)).Raw()
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 121 || ce.Name != "DocumentValidationFailure" {
		t.Fatalf("findAndModify: %v, want DocumentValidationFailure", err)
	}
	if got := ce.Raw.Lookup("errInfo").Document().String(); got != wantUpdate {
		t.Errorf("findAndModify errInfo\n got %s\nwant %s (reply %s)", got, wantUpdate, raw)
	}
}

// TestValidatorOptionsRefused checks create and collMod refuse what
// MongoDB refuses, and listCollections shows the options as set.
func TestValidatorOptionsRefused(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	db := c.Database("valopts")
	for _, tc := range []struct {
		db, cmd string
		code    int32
	}{
		{"valopts", `{"create": "a", "validator": 7}`, 14},
		{"valopts", `{"create": "a", "validator": {"$jsonSchema": {"invalid": 1}}}`, 9},
		{"valopts", `{"create": "a", "validator": {"$text": {"$search": "bob"}}}`, 224},
		{"valopts", `{"create": "a", "validator": {"$where": "this.a == this.b"}}`, 224},
		{"valopts", `{"create": "a", "validator": {"$or": [{"$where": "1"}]}}`, 224},
		{"valopts", `{"create": "a", "validator": {"loc": {"$near": [0, 0]}}}`, 224},
		{"valopts", `{"create": "a", "validator": {"$expr": {"$eq": ["$a", "$$unbound"]}}}`, 17276},
		{"valopts", `{"create": "a", "validator": {"a": {"$bogus": 1}}}`, 2},
		{"valopts", `{"create": "a", "validationLevel": "lenient"}`, 2},
		{"valopts", `{"create": "a", "validationAction": 1}`, 14},
		{"admin", `{"create": "a", "validator": {"a": {"$exists": true}}}`, 72},
		{"config", `{"create": "a", "validator": {"a": {"$exists": true}}}`, 72},
	} {
		err := c.Database(tc.db).RunCommand(ctx, mustJSON(t, tc.cmd)).Err()
		var ce mongo.CommandError
		if !errors.As(err, &ce) || ce.Code != tc.code {
			t.Errorf("%s on %s: %v, want code %d", tc.cmd, tc.db, err, tc.code)
		}
	}
	if err := db.RunCommand(ctx, mustJSON(t, `{"create": "b", "validator": {"a": {"$exists": true}}, "validationLevel": "moderate"}`)).Err(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cmd  string
		code int32
	}{
		{`{"collMod": "b", "validator": {"$text": {"$search": "bob"}}}`, 224},
		{`{"collMod": "b", "validator": {"$jsonSchema": {"invalid": 7}}}`, 9},
		{`{"collMod": "b", "validationAction": "explode"}`, 2},
		{`{"collMod": "nope", "validator": {"a": 1}}`, 26},
		{`{"collMod": "b", "validator": {"b": {"$type": "string"}}, "validationAction": "warn"}`, 0},
		// One collMod is one commit: a failing index change undoes the validator.
		{`{"collMod": "b", "validator": {"z": 1}, "index": {"name": "nope", "hidden": true}}`, 27},
	} {
		err := db.RunCommand(ctx, mustJSON(t, tc.cmd)).Err()
		var ce mongo.CommandError
		if tc.code == 0 && err != nil || tc.code != 0 && (!errors.As(err, &ce) || ce.Code != tc.code) {
			t.Errorf("%s: %v, want code %d", tc.cmd, err, tc.code)
		}
	}
	specs, err := db.ListCollectionSpecifications(ctx, bson.D{{Key: "name", Value: "b"}})
	if err != nil || len(specs) != 1 {
		t.Fatalf("listCollections: %v %v", specs, err)
	}
	want := canonicalJSON(t, `{"validator": {"b": {"$type": "string"}}, "validationLevel": "moderate", "validationAction": "warn"}`)
	if got := specs[0].Options.String(); got != want {
		t.Errorf("listCollections options\n got %s\nwant %s", got, want)
	}
}

// TestValidationWarnLogs checks validationAction "warn": the write goes
// on and the log gets MongoDB's line 20294 with the namespace, the
// document and the errInfo.
func TestValidationWarnLogs(t *testing.T) {
	ring := commands.NewLogRing(64, slog.NewJSONHandler(io.Discard, nil))
	srv, addr := startRawServer(t, slog.New(ring))
	srv.env.Logs = ring
	s := &testServer{addr: addr, env: srv.env}
	c := s.client(t)
	ctx := context.Background()
	db := c.Database("warnlog")
	if err := db.RunCommand(ctx, mustJSON(t, `{"create": "c", "validator": {"a": 1}, "validationAction": "warn"}`)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := db.RunCommand(ctx, mustJSON(t, `{"insert": "c", "documents": [{"_id": 1, "a": 2}]}`)).Err(); err != nil {
		t.Fatalf("insert under warn: %v", err)
	}
	var reply struct {
		Log []string `bson:"log"`
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "getLog", Value: "global"}}).Decode(&reply); err != nil {
		t.Fatal(err)
	}
	var line map[string]any
	for _, l := range reply.Log {
		if strings.Contains(l, "Document would fail validation") {
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatalf("%s: %v", l, err)
			}
		}
	}
	if line == nil {
		t.Fatalf("no validation warning in the log: %v", reply.Log)
	}
	attr, _ := line["attr"].(map[string]any)
	errInfo, _ := attr["errInfo"].(map[string]any)
	details, _ := errInfo["details"].(map[string]any)
	if line["id"] != float64(20294) || attr["namespace"] != "warnlog.c" || details["operatorName"] != "$eq" || details["reason"] != "comparison failed" {
		t.Errorf("log line %v, want id 20294 with namespace warnlog.c and the errInfo of {a: 1}", line)
	}
}

// TestValidationDetailsCorpus runs query's explain corpus over the wire:
// each validator on its own collection, each document inserted, and the
// write error's errInfo compared with MongoDB's. Cases whose document has
// no _id (the server would add one, which their schema counts) or that
// pass run only in process.
func TestValidationDetailsCorpus(t *testing.T) {
	cases, err := querytest.LoadExplain("../query/testdata/explain/validation_errors.txt")
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	db := c.Database("explaincorpus")
	ran := 0
	for i, tc := range cases {
		id, err := tc.Doc.LookupErr("_id")
		if err != nil || len(tc.Details) <= 5 {
			continue
		}
		ran++
		t.Run(tc.Name, func(t *testing.T) {
			coll := fmt.Sprintf("c%d", i)
			create := bson.D{{Key: "create", Value: coll}, {Key: "validator", Value: bson.Raw(tc.Filter)}}
			if err := db.RunCommand(ctx, create).Err(); err != nil {
				t.Fatal(err)
			}
			reply, err := db.RunCommand(ctx, bson.D{{Key: "insert", Value: coll}, {Key: "documents", Value: bson.A{bson.Raw(tc.Doc)}}}).Raw()
			var we mongo.WriteException
			if !errors.As(err, &we) {
				t.Fatalf("insert: %v, want a validation failure", err)
			}
			info := reply.Lookup("writeErrors").Array().Index(0).Document().Lookup("errInfo").Document()
			want := bsoncore.NewDocumentBuilder().AppendValue("failingDocumentId", id).AppendDocument("details", tc.Details).Build()
			if got := info.String(); got != bson.Raw(want).String() {
				t.Errorf("errInfo\n got %s\nwant %s", got, bson.Raw(want))
			}
		})
	}
	if ran < 20 {
		t.Errorf("only %d corpus cases ran over the wire", ran)
	}
}
