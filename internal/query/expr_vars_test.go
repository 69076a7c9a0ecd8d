package query_test

import (
	"testing"
	"time"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestExprVariables: $expr reads the command's let variables and its one
// $$NOW, also under $and/$or; an unknown variable fails at parse time
// (17276) as in MongoDB.
func TestExprVariables(t *testing.T) {
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	opts := query.Options{
		Vars: map[string]bsoncore.Value{"lim": bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 5)}},
		Now:  now,
	}
	cases := []struct {
		filter string
		doc    string
		want   bool
	}{
		{`{"$expr": {"$lt": ["$a", "$$lim"]}}`, `{"a": 3}`, true},
		{`{"$expr": {"$lt": ["$a", "$$lim"]}}`, `{"a": 7}`, false},
		{`{"$or": [{"b": 1}, {"$expr": {"$gte": ["$a", "$$lim"]}}]}`, `{"a": 7}`, true},
		{`{"$expr": {"$eq": ["$t", "$$NOW"]}}`, `{"t": {"$date": "2024-05-01T12:00:00Z"}}`, true},
		{`{"$expr": {"$eq": ["$t", "$$NOW"]}}`, `{"t": {"$date": "2024-05-01T12:00:01Z"}}`, false},
	}
	for _, c := range cases {
		f, err := query.ParseWith(doc(t, c.filter), opts)
		if err != nil {
			t.Fatalf("%s: %v", c.filter, err)
		}
		// Twice, and interleaved with a filter without variables, to
		// check pooled match states do not carry one filter's variables
		// to another.
		for i := 0; i < 2; i++ {
			if got := f.Match(doc(t, c.doc)); got != c.want {
				t.Errorf("%s on %s = %v, want %v", c.filter, c.doc, got, c.want)
			}
			mustParse(t, `{"$expr": {"$lt": ["$$NOW", {"$toDate": 0}]}}`).Match(doc(t, `{}`))
		}
	}
	_, err := query.Parse(doc(t, `{"$expr": {"$lt": ["$a", "$$lim"]}}`))
	if code := mongoerr.CodeOf(err); code != 17276 {
		t.Errorf("undefined variable: code %d (%v), want 17276", code, err)
	}
}
