package changestream

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/query"
)

// prefilterMatches are $match stages after $changeStream, and the CRUD
// types MatchOpTypes reads from each (0: no prefilter).
var prefilterMatches = []struct {
	match bson.D
	want  OpTypes
}{
	{bson.D{{Key: "operationType", Value: "insert"}}, opInsert},
	{bson.D{{Key: "operationType", Value: bson.D{{Key: "$eq", Value: "delete"}}}}, opDelete},
	{bson.D{{Key: "operationType", Value: bson.D{{Key: "$in", Value: bson.A{"update", "replace"}}}}}, opUpdate | opReplace},
	{bson.D{{Key: "operationType", Value: bson.D{{Key: "$in", Value: bson.A{"drop", "insert"}}}}}, opInsert},
	{bson.D{{Key: "operationType", Value: "drop"}}, opNone},
	{bson.D{{Key: "operationType", Value: bson.D{{Key: "$in", Value: bson.A{}}}}}, opNone},
	{bson.D{{Key: "fullDocument.v", Value: 1}, {Key: "operationType", Value: "update"}}, opUpdate},
	// Not read: no prefilter.
	{bson.D{{Key: "fullDocument.v", Value: 1}}, 0},
	{bson.D{{Key: "operationType", Value: bson.D{{Key: "$ne", Value: "insert"}}}}, 0},
	{bson.D{{Key: "operationType", Value: bson.D{{Key: "$in", Value: bson.A{"insert", bson.Regex{Pattern: "^up"}}}}}}, 0},
	{bson.D{{Key: "operationType", Value: bson.D{{Key: "$eq", Value: "insert"}, {Key: "$ne", Value: "x"}}}}, 0},
	{bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "operationType", Value: "insert"}}, bson.D{{Key: "operationType", Value: "delete"}}}}}, 0},
	{bson.D{{Key: "operationType", Value: "insert"}, {Key: "operationType", Value: "delete"}}, 0},
	{bson.D{{Key: "operationType", Value: 1}}, 0},
	// Heads: MatchHead's filters (types only where MatchOpTypes reads them).
	{bson.D{{Key: "ns.coll", Value: "b"}}, 0},
	{bson.D{{Key: "documentKey._id", Value: bson.D{{Key: "$lt", Value: 3}}}}, 0},
	{bson.D{{Key: "ns", Value: bson.D{{Key: "db", Value: "db"}, {Key: "coll", Value: "a"}}}, {Key: "operationType", Value: "update"}}, opUpdate},
	{bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "ns.coll", Value: "a"}}, bson.D{{Key: "documentKey._id", Value: 4}}}}}, 0},
	{bson.D{{Key: "documentKey._id", Value: bson.D{{Key: "$in", Value: bson.A{1, 101}}}}, {Key: "fullDocument.v", Value: bson.D{{Key: "$exists", Value: true}}}}, 0},
	{bson.D{{Key: "$and", Value: bson.A{bson.D{{Key: "ns.coll", Value: bson.D{{Key: "$ne", Value: "a"}}}}, bson.D{{Key: "$expr", Value: true}}}}}, 0},
	{bson.D{{Key: "$nor", Value: bson.A{bson.D{{Key: "ns.coll", Value: "b"}}, bson.D{{Key: "operationType", Value: "delete"}}}}}, 0},
	{bson.D{{Key: "ns.coll", Value: bson.Regex{Pattern: "^a"}}, {Key: "operationType", Value: bson.D{{Key: "$ne", Value: "insert"}}}}, 0},
	{bson.D{{Key: "documentKey", Value: bson.D{{Key: "_id", Value: 2}}}}, 0},
	{bson.D{{Key: "documentKey._id", Value: 2.0}, {Key: "ns.db", Value: "db"}}, 0},
}

// prefilterLog is a log of every kind of entry: inserts, updates with
// diffs, replaces, deletes on two collections, a transaction's applyOps
// mixing them, create, createIndexes, a rename and a drop (invalidating a
// collection stream).
func prefilterLog(t *testing.T) *fakeLog {
	l := &fakeLog{}
	ts := hlc.New(100, 0)
	add := func(d bson.D) {
		ts++
		l.add(ts, logEntry(t, ts, d))
	}
	diff := func(i int) bson.D {
		return bson.D{{Key: "$v", Value: 2}, {Key: "diff", Value: bson.D{{Key: "u", Value: bson.D{{Key: "v", Value: i}}}}}}
	}
	add(op("c", "db.$cmd", bson.D{{Key: "create", Value: "a"}}, nil))
	for i := range 6 {
		for _, ns := range []string{"db.a", "db.b"} {
			add(op("i", ns, bson.D{{Key: "_id", Value: i}, {Key: "v", Value: 0}}, nil))
			add(op("u", ns, diff(i), bson.D{{Key: "_id", Value: i}}))
			add(op("u", ns, bson.D{{Key: "_id", Value: i}, {Key: "v", Value: 1}}, bson.D{{Key: "_id", Value: i}}))
		}
		add(bson.D{{Key: "lsid", Value: bson.D{{Key: "id", Value: 1}}}, {Key: "txnNumber", Value: int64(i)}, {Key: "op", Value: "c"}, {Key: "ns", Value: "admin.$cmd"}, {Key: "o", Value: bson.D{{Key: "applyOps", Value: bson.A{
			op("i", "db.a", bson.D{{Key: "_id", Value: 100 + i}}, nil),
			op("u", "db.a", diff(i), bson.D{{Key: "_id", Value: i}}),
			op("d", "db.b", bson.D{{Key: "_id", Value: i}}, nil),
		}}}}})
		add(op("d", "db.a", bson.D{{Key: "_id", Value: i}}, nil))
	}
	add(op("c", "db.$cmd", bson.D{{Key: "createIndexes", Value: "a"}, {Key: "key", Value: bson.D{{Key: "v", Value: 1}}}, {Key: "name", Value: "v_1"}}, nil))
	add(op("c", "db.$cmd", bson.D{{Key: "renameCollection", Value: "db.b"}, {Key: "to", Value: "db.c"}}, nil))
	add(op("i", "db.a", bson.D{{Key: "_id", Value: 1000}}, nil))
	add(op("c", "db.$cmd", bson.D{{Key: "drop", Value: "a"}}, nil))
	return l
}

// TestMatchOpTypes: what MatchOpTypes reads from each $match, and that it
// is sound: every event of prefilterLog the $match itself (package query)
// keeps is of a type the prefilter keeps.
func TestMatchOpTypes(t *testing.T) {
	l := prefilterLog(t)
	var events []bsoncore.Document
	for _, scope := range []Scope{{DB: "db", Coll: "a"}, {DB: "db"}, {}} {
		for _, spec := range []Spec{{FullDocument: "default", FullDocumentBeforeChange: "off", ShowExpandedEvents: true, HasStartAt: true, StartAtOperationTime: l.ts[0]}} {
			s := open(t, l, scope, spec)
			for {
				d, err := s.Next()
				if err != nil {
					t.Fatal(err)
				}
				if d == nil {
					break
				}
				events = append(events, d)
			}
		}
	}
	if len(events) < 100 {
		t.Fatalf("the streams read %d events", len(events))
	}
	for _, c := range prefilterMatches {
		m := doc(t, c.match)
		got := MatchOpTypes(m)
		if got != c.want {
			t.Errorf("%v: MatchOpTypes %b, want %b", c.match, got, c.want)
		}
		f, err := query.Parse(m)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range events {
			kind := ev.Lookup("operationType").StringValue()
			if f.Match(ev) && !got.keeps(kind) {
				t.Errorf("%v keeps a %s event the prefilter %b drops", c.match, kind, got)
			}
		}
	}
}

// TestPrefilterSameEvents: a stream with Prefilter (read alone and
// through a Feed) returns the events a stream without it returns less the
// CRUD events of types MatchOpTypes leaves out and those whose event fails
// MatchHead's filter, and after each one (and once caught up) the same
// resume tokens, as when a later $match drops those events: over every
// $match of prefilterMatches, scope and fullDocument option. Each event
// dropped is one the whole $match (package query) drops: the prefilter is
// sound, and its filter, matched on heads, agrees with it matched on
// events.
func TestPrefilterSameEvents(t *testing.T) {
	l := prefilterLog(t)
	specs := []Spec{
		{FullDocument: "default", FullDocumentBeforeChange: "off"},
		{FullDocument: "whenAvailable", FullDocumentBeforeChange: "whenAvailable", ShowExpandedEvents: true},
		{FullDocument: "updateLookup", FullDocumentBeforeChange: "off"},
	}
	for i := range specs {
		specs[i].HasStartAt, specs[i].StartAtOperationTime = true, l.ts[0]
	}
	kept, dropped, byHead := 0, 0, 0
	for _, c := range prefilterMatches {
		m := doc(t, c.match)
		keep := MatchOpTypes(m)
		head, _ := MatchHead(m)
		whole, err := query.Parse(m)
		if err != nil {
			t.Fatal(err)
		}
		for _, scope := range []Scope{{DB: "db", Coll: "a"}, {DB: "db"}, {}} {
			for _, spec := range specs {
				f := NewFeed(l)
				for _, via := range []string{"alone", "feed"} {
					name := fmt.Sprintf("%v %v %+v %s", c.match, scope, spec, via)
					ref := open(t, l, scope, spec)
					var s *Stream
					var err error
					if via == "feed" {
						s, err = f.Open(context.Background(), scope, spec)
					} else {
						s, err = Open(context.Background(), l, scope, spec)
					}
					if err != nil {
						t.Fatal(err)
					}
					s.Prefilter(m)
					for n := 0; ; n++ {
						want, err := ref.Next()
						if err != nil {
							t.Fatal(err)
						}
						if want != nil {
							kind := want.Lookup("operationType").StringValue()
							_, crud := opTypeBits[kind]
							typeDrop := !keep.keeps(kind)
							headDrop := crud && !typeDrop && head != nil && !head.Match(want)
							if typeDrop || headDrop {
								if whole.Match(want) {
									t.Fatalf("%s: the prefilter drops event %d, which the $match keeps: %v", name, n, want)
								}
								dropped++
								if headDrop {
									byHead++
								}
								continue // a later $match drops it
							}
						}
						kept++
						got, err := s.Next()
						if err != nil {
							t.Fatal(err)
						}
						if !bytes.Equal(got, want) {
							t.Fatalf("%s: event %d is %v, want %v", name, n, got, want)
						}
						if g, w := s.ResumeToken(), ref.ResumeToken(); !bytes.Equal(g, w) {
							t.Fatalf("%s: after event %d the resume token is %v, want %v", name, n, g, w)
						}
						if g, w := s.ResumeTokenBefore(), ref.ResumeTokenBefore(); !bytes.Equal(g, w) {
							t.Fatalf("%s: after event %d the token before is %v, want %v", name, n, g, w)
						}
						if want == nil {
							break
						}
					}
				}
			}
		}
	}
	if kept < 1000 || dropped < 1000 || byHead < 500 {
		t.Fatalf("%d events compared, %d dropped (%d by their heads)", kept, dropped, byHead)
	}
}
