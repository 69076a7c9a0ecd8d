package query_test

import (
	"testing"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// doc parses relaxed extended JSON into a document, for tests.
func doc(t testing.TB, s string) bsoncore.Document {
	t.Helper()
	var raw bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(s), false, &raw); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return bsoncore.Document(raw)
}

func mustParse(t testing.TB, filter string) *query.Filter {
	t.Helper()
	f, err := query.Parse(doc(t, filter))
	if err != nil {
		t.Fatalf("Parse(%s): %v", filter, err)
	}
	return f
}

func TestIDEquality(t *testing.T) {
	for _, tc := range []struct {
		filter string
		want   string // relaxed JSON of the _id, "" for none
	}{
		{`{"_id": 5}`, `5`},
		{`{"_id": "x"}`, `"x"`},
		{`{"_id": {"a": 1}}`, `{"a": 1}`},
		{`{"_id": {"$oid": "5f0000000000000000000000"}}`, `{"$oid":"5f0000000000000000000000"}`},
		{`{"_id": null}`, `null`},
		{`{"_id": {"$gt": 5}}`, ``},
		{`{"_id": {"$eq": 5}}`, ``},
		{`{"_id": {"$regularExpression": {"pattern": "a", "options": ""}}}`, ``},
		{`{"_id": [1, 2]}`, ``},
		{`{"_id": 5, "a": 1}`, ``},
		{`{"a": 5}`, ``},
		{`{}`, ``},
	} {
		f := mustParse(t, tc.filter)
		v, ok := f.IDEquality()
		if tc.want == "" {
			if ok {
				t.Errorf("%s: IDEquality = %v, want none", tc.filter, v)
			}
			continue
		}
		want := doc(t, `{"v": `+tc.want+`}`).Lookup("v")
		if !ok || !v.Equal(want) {
			t.Errorf("%s: IDEquality = %v, %v; want %v", tc.filter, v, ok, want)
		}
	}
}

func TestMatchDetailsArrayPos(t *testing.T) {
	for _, tc := range []struct {
		filter, doc string
		matched     bool
		pos         int
	}{
		{`{"a": 2}`, `{"a": [1, 2, 3]}`, true, 1},
		{`{"a": [1, 2, 3]}`, `{"a": [1, 2, 3]}`, true, -1}, // whole-array match: no position
		{`{"a": 5}`, `{"a": 5}`, true, -1},
		{`{"a.b": 7}`, `{"a": [{"b": 1}, {"b": [6, 7]}]}`, true, 1}, // outermost array wins
		{`{"a": {"$elemMatch": {"b": 2}}}`, `{"a": [{"b": 1}, {"b": 2}]}`, true, 1},
		{`{"a": {"$gt": 1}, "b": 3}`, `{"a": [0, 5], "b": [3]}`, true, 0}, // the last array match wins
		{`{"a": {"$ne": 1}}`, `{"a": [2, 3]}`, true, -1},                  // negations report nothing
		{`{"$or": [{"a": 9}, {"a": 3}]}`, `{"a": [2, 3]}`, true, 1},
		{`{"a": 9}`, `{"a": [2, 3]}`, false, -1},
		{`{"a.1": 3}`, `{"a": [2, 3]}`, true, -1}, // explicit index: not an implicit traversal
	} {
		f := mustParse(t, tc.filter)
		m, pos := f.MatchDetails(doc(t, tc.doc))
		if m != tc.matched || pos != tc.pos {
			t.Errorf("%s on %s: MatchDetails = %v, %d; want %v, %d", tc.filter, tc.doc, m, pos, tc.matched, tc.pos)
		}
	}
}

func TestExecRuntimeError(t *testing.T) {
	f := mustParse(t, `{"$expr": {"$divide": ["$a", 0]}}`)
	_, err := f.Exec(doc(t, `{"a": 1}`))
	if mongoerr.CodeOf(err) != mongoerr.BadValue {
		t.Fatalf("Exec error = %v, want BadValue (2)", err)
	}
	if f.Match(doc(t, `{"a": 1}`)) {
		t.Fatal("Match with a run-time error reported a match")
	}
}

func TestParseRejectsInvalidBSON(t *testing.T) {
	_, err := query.Parse(bsoncore.Document{9, 0, 0, 0, 2, 'a', 0, 1, 0})
	if mongoerr.CodeOf(err) != mongoerr.FailedToParse {
		t.Fatalf("Parse(invalid) = %v, want FailedToParse", err)
	}
}

func TestProjectionAppendsToBuffer(t *testing.T) {
	p, err := query.ParseProjection(doc(t, `{"a": 1, "_id": 0}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	prefix := []byte("prefix")
	out, err := p.Apply(prefix, doc(t, `{"_id": 1, "a": 2, "b": 3}`), -1)
	if err != nil {
		t.Fatal(err)
	}
	if string(out[:6]) != "prefix" {
		t.Fatalf("Apply did not append to dst")
	}
	got := bsoncore.Document(out[6:])
	if err := got.Validate(); err != nil {
		t.Fatal(err)
	}
	if want := doc(t, `{"a": 2}`); string(got) != string(want) {
		t.Fatalf("Apply = %v, want %v", got, want)
	}
}

func TestPositionalNeedsFilter(t *testing.T) {
	_, err := query.ParseProjection(doc(t, `{"a.$": 1}`), nil)
	if mongoerr.CodeOf(err) != 51050 {
		t.Fatalf("err = %v, want code 51050", err)
	}
}

// TestIDFilterAllocs bounds the parse of a point filter ({_id: v}, every
// point update's q): the Filter with its environment, and the equality's
// node with its comparison; the name "_id" and its one-part path are
// shared (the parse made five). It matches as before.
func TestIDFilterAllocs(t *testing.T) {
	const bound = 2
	f := doc(t, `{"_id": 42}`)
	n := testing.AllocsPerRun(1000, func() {
		if _, err := query.ParseWith(f, query.Options{}); err != nil {
			t.Fatal(err)
		}
	})
	if n > bound {
		t.Errorf("%.1f allocations per {_id: v} filter, want at most %d", n, bound)
	}
	q := mustParse(t, `{"_id": 42}`)
	for _, c := range []struct {
		doc   string
		match bool
	}{{`{"_id": 42}`, true}, {`{"_id": 42.0}`, true}, {`{"_id": 43}`, false}, {`{"a": 42}`, false}} {
		if got := q.Match(doc(t, c.doc)); got != c.match {
			t.Errorf("%s: matched %v, want %v", c.doc, got, c.match)
		}
	}
}
