package validation_test

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/validation"
)

func raw(t testing.TB, s string) bson.Raw {
	t.Helper()
	var r bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(s), false, &r); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return r
}

// TestCheck runs the decision table of level × action × insert/update
// with a valid or invalid old document.
func TestCheck(t *testing.T) {
	const good, bad = `{"_id": 1, "a": 1}`, `{"_id": 1, "a": -1}`
	for _, tc := range []struct {
		options  string
		old, new string // old "" is an insert
		outcome  string // "pass", "warn" or "fail"
	}{
		{`{"validator": {"a": {"$gte": 0}}}`, "", good, "pass"},
		{`{"validator": {"a": {"$gte": 0}}}`, "", bad, "fail"},
		{`{"validator": {"a": {"$gte": 0}}}`, good, bad, "fail"},
		{`{"validator": {"a": {"$gte": 0}}}`, bad, bad, "fail"},
		{`{"validator": {"a": {"$gte": 0}}}`, bad, good, "pass"},
		{`{"validator": {"a": {"$gte": 0}}, "validationLevel": "moderate"}`, "", bad, "fail"},
		{`{"validator": {"a": {"$gte": 0}}, "validationLevel": "moderate"}`, good, bad, "fail"},
		{`{"validator": {"a": {"$gte": 0}}, "validationLevel": "moderate"}`, bad, bad, "pass"},
		{`{"validator": {"a": {"$gte": 0}}, "validationLevel": "off"}`, "", bad, "pass"},
		{`{"validator": {"a": {"$gte": 0}}, "validationLevel": "off"}`, good, bad, "pass"},
		{`{"validator": {"a": {"$gte": 0}}, "validationAction": "warn"}`, "", bad, "warn"},
		{`{"validator": {"a": {"$gte": 0}}, "validationAction": "warn"}`, good, bad, "warn"},
		{`{"validator": {"a": {"$gte": 0}}, "validationAction": "warn", "validationLevel": "off"}`, "", bad, "pass"},
		{`{"validator": {"$expr": {"$divide": [1, "$a"]}}}`, "", `{"_id": 1, "a": 0}`, "fail"},
		{`{"validator": {"$expr": {"$divide": [1, "$a"]}}, "validationAction": "warn"}`, "", `{"_id": 1, "a": 0}`, "warn"},
		{`{"validator": {}}`, "", bad, "pass"},
		{`{"idGenerator": "sequential"}`, "", bad, "pass"},
		{`{}`, "", bad, "pass"},
	} {
		r, err := validation.FromOptions(raw(t, tc.options))
		if err != nil {
			t.Fatalf("%s: %v", tc.options, err)
		}
		var old bsoncore.Document
		if tc.old != "" {
			old = bsoncore.Document(raw(t, tc.old))
		}
		warning, err := r.CheckUpdate(old, bsoncore.Document(raw(t, tc.new)))
		got := "pass"
		switch {
		case err != nil:
			got = "fail"
			e, _ := mongoerr.As(err)
			if e == nil || e.Code != mongoerr.DocumentValidationFailure || len(e.Extra) != 1 || e.Extra[0].Name != "errInfo" {
				t.Errorf("%s %s→%s: error %v, want DocumentValidationFailure with errInfo", tc.options, tc.old, tc.new, err)
			}
		case warning != nil:
			got = "warn"
			if id, _ := warning.Lookup("failingDocumentId").AsInt64OK(); id != 1 {
				t.Errorf("warning %s lacks failingDocumentId", warning)
			}
		}
		if got != tc.outcome {
			t.Errorf("%s, %q → %q: %s, want %s", tc.options, tc.old, tc.new, got, tc.outcome)
		}
	}
}

// TestNowIsTheWriteTime: a validator reading $$NOW compares with the time
// of the check, not of compilation (rules are cached for a collection's
// life).
func TestNowIsTheWriteTime(t *testing.T) {
	r, err := validation.FromOptions(raw(t, `{"validator": {"$expr": {"$lt": ["$t", "$$NOW"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	d, _ := bson.Marshal(bson.D{{Key: "_id", Value: 1}, {Key: "t", Value: bson.NewDateTimeFromTime(time.Now().Add(-5 * time.Millisecond))}})
	if _, err := r.CheckInsert(d); err != nil {
		t.Errorf("a time before the write but after compilation fails $lt $$NOW: %v", err)
	}
}

// TestCheckOptions checks what create and collMod refuse.
func TestCheckOptions(t *testing.T) {
	for _, tc := range []struct {
		db, coll, options string
		code              mongoerr.Code
	}{
		{"db", "c", `{"validator": {"a": 1}, "validationLevel": "moderate", "validationAction": "warn"}`, 0},
		{"db", "c", `{"validationLevel": "off"}`, 0},
		{"db", "c", `{"validator": {}}`, 0},
		{"db", "c", `{"validator": 7}`, mongoerr.TypeMismatch},
		{"db", "c", `{"validator": {"$where": "true"}}`, mongoerr.QueryFeatureNotAllowed},
		{"db", "c", `{"validator": {"$nor": [{"$text": {"$search": "x"}}]}}`, mongoerr.QueryFeatureNotAllowed},
		{"db", "c", `{"validator": {"p": {"$nearSphere": [0, 0]}}}`, mongoerr.QueryFeatureNotAllowed},
		{"db", "c", `{"validator": {"a": {"$unknown": 1}}}`, mongoerr.BadValue},
		{"db", "c", `{"validator": {"$jsonSchema": {"bsonType": "integer"}}}`, mongoerr.BadValue},
		{"db", "c", `{"validationLevel": "sometimes"}`, mongoerr.BadValue},
		{"db", "c", `{"validationAction": true}`, mongoerr.TypeMismatch},
		{"local", "c", `{"validator": {"a": 1}}`, mongoerr.InvalidOptions},
		{"db", "system.views", `{"validator": {"a": 1}}`, mongoerr.InvalidOptions},
	} {
		err := validation.CheckOptions("create", tc.db, tc.coll, raw(t, tc.options))
		if got := mongoerr.CodeOf(err); got != tc.code {
			t.Errorf("%s.%s %s: %v, want code %d", tc.db, tc.coll, tc.options, err, tc.code)
		}
	}
}

// BenchmarkCheckInsert is the per-document cost of a passing check.
func BenchmarkCheckInsert(b *testing.B) {
	for _, bc := range []struct{ name, options string }{
		{"query", `{"validator": {"a": {"$gte": 0}, "s": {"$type": "string"}}}`},
		{"jsonSchema", `{"validator": {"$jsonSchema": {"required": ["a", "s"], "properties": {"a": {"bsonType": "int", "minimum": 0}, "s": {"bsonType": "string", "maxLength": 20}}}}}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r, err := validation.FromOptions(raw(b, bc.options))
			if err != nil {
				b.Fatal(err)
			}
			d, _ := bson.Marshal(bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: int32(5)}, {Key: "s", Value: "some text"}})
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.CheckInsert(d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestLargeExplanationIsTruncated: a failing document whose values would
// make the explanation larger than its bound is explained without quoting
// them, and the write error stays small enough for a reply.
func TestLargeExplanationIsTruncated(t *testing.T) {
	r, err := validation.FromOptions(raw(t, `{"validator": {"a": {"$size": 1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	big := make(bson.A, 0, 10)
	for range 10 {
		big = append(big, string(make([]byte, 1<<20)))
	}
	d, _ := bson.Marshal(bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: big}})
	_, err = r.CheckInsert(d)
	e, ok := mongoerr.As(err)
	if !ok || e.Code != mongoerr.DocumentValidationFailure {
		t.Fatalf("%v, want DocumentValidationFailure", err)
	}
	info := e.Extra[0].Value.(bson.Raw)
	if len(info) > 1<<20 {
		t.Errorf("errInfo is %d bytes", len(info))
	}
	details := info.Lookup("details").Document()
	if details.Lookup("operatorName").StringValue() != "$size" || details.Lookup("reason").StringValue() != "array length was not equal to given size" {
		t.Errorf("truncated details %s lost the operator or the reason", details)
	}
	if _, err := details.LookupErr("consideredValue"); err == nil {
		t.Errorf("truncated details still quote the document")
	}
}
