package changestream

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/query"
)

// BenchmarkStreamInsertEvents is the server's cost of one insert event: a
// collection stream reading b.N inserts from a real engine's oplog (read
// in batches as getMores do), beside BenchmarkEngineInsert, the cost of the
// insert itself, for the share ten streams add to each insert.
func BenchmarkStreamInsertEvents(b *testing.B) {
	e := benchEngine(b)
	ns := engine.Namespace{DB: "db", Coll: "c"}
	log := EngineLog(e)
	s, err := Open(context.Background(), log, Scope{DB: "db", Coll: "c"}, Spec{FullDocument: "default", FullDocumentBeforeChange: "off"})
	if err != nil {
		b.Fatal(err)
	}
	insertN(b, e, ns, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	got := 0
	for got < b.N {
		d, err := s.Next()
		if err != nil {
			b.Fatal(err)
		}
		if d == nil {
			b.Fatalf("%d events of %d", got, b.N)
		}
		got++
	}
}

// BenchmarkEngineInsert is one single-document insert (its own commit).
func BenchmarkEngineInsert(b *testing.B) {
	e := benchEngine(b)
	b.ReportAllocs()
	b.ResetTimer()
	insertN(b, e, engine.Namespace{DB: "db", Coll: "c"}, b.N)
}

func benchEngine(b *testing.B) *engine.Engine {
	e, err := engine.Open(b.TempDir(), engine.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Close() })
	return e
}

func insertN(b *testing.B, e *engine.Engine, ns engine.Namespace, n int) {
	for i := range n {
		d, _ := bson.Marshal(bson.D{{Key: "_id", Value: i}, {Key: "v", Value: "a small document"}})
		if _, err := e.Insert(ns, []bsoncore.Document{d}, true); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStreamMatchDelete is a collection stream under $match
// {operationType: "delete"} reading b.N inserts (none of which it returns),
// the $match run as exec's does: built then matched (prefilter=off, as
// before KeepOnly), or prefiltered by MatchOpTypes (prefilter=on).
func BenchmarkStreamMatchDelete(b *testing.B) {
	benchStreamMatch(b, bson.D{{Key: "operationType", Value: "delete"}})
}

// BenchmarkStreamMatchKey is BenchmarkStreamMatchDelete under $match
// {"documentKey._id": -1}, prefiltered on each event's head (MatchHead).
func BenchmarkStreamMatchKey(b *testing.B) {
	benchStreamMatch(b, bson.D{{Key: "documentKey._id", Value: -1}})
}

// benchStreamMatch reads b.N inserts, none of which m matches, through a
// stream under $match m, built then matched and prefiltered.
func benchStreamMatch(b *testing.B, m bson.D) {
	match, _ := bson.Marshal(m)
	f, err := query.Parse(match)
	if err != nil {
		b.Fatal(err)
	}
	for _, pre := range []bool{false, true} {
		b.Run(fmt.Sprintf("prefilter=%v", map[bool]string{false: "off", true: "on"}[pre]), func(b *testing.B) {
			e := benchEngine(b)
			s, err := Open(context.Background(), EngineLog(e), Scope{DB: "db", Coll: "c"}, Spec{FullDocument: "default", FullDocumentBeforeChange: "off"})
			if err != nil {
				b.Fatal(err)
			}
			if pre {
				s.Prefilter(match)
			}
			insertN(b, e, engine.Namespace{DB: "db", Coll: "c"}, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for {
				d, err := s.Next()
				if err != nil {
					b.Fatal(err)
				}
				if d == nil {
					break
				}
				if f.Match(d) {
					b.Fatal("an insert matched")
				}
			}
			if got := s.lastPos.ts; got != s.log.LastCommitted() {
				b.Fatalf("the stream stopped at %v, the log at %v", got, s.log.LastCommitted())
			}
		})
	}
}
