package changestream

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/hlc"
)

// TestFeedSameAsLog: streams of several shapes read through one Feed with
// a small window (so it slides, and streams fall behind it and read the
// log themselves) return the same events and resume tokens, read by read,
// as the same streams reading the log alone, over a seeded random log
// that grows between reads (once by more than a fill reads, with a new
// stream at its end); the Feed's window stays within its bounds. Once
// with the Feed filling its window from the log, once with the log
// handing it most groups as they are added (a tapLog; one in ten is not
// handed over, as when the tap drops groups): then it reads the log less
// than half as often.
func TestFeedSameAsLog(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	fills := map[bool]int{}
	for _, tapped := range []bool{false, true} {
		t.Run(fmt.Sprintf("tapped=%v", tapped), func(t *testing.T) {
			fills[tapped] = feedSameAsLog(t, rand.New(rand.NewPCG(seed, seed)), tapped)
		})
	}
	t.Logf("reads of the log: %d filling, %d tapped", fills[false], fills[true])
	if !t.Failed() && fills[true]*2 > fills[false] {
		t.Errorf("the tapped Feed read the log %d times, the other %d", fills[true], fills[false])
	}
}

// feedSameAsLog is TestFeedSameAsLog's run; it returns how many times the
// Feed read the log.
func feedSameAsLog(t *testing.T, rng *rand.Rand, tapped bool) int {
	defer func(e, b int) { feedEntries, feedBytes = e, b }(feedEntries, feedBytes)
	feedEntries, feedBytes = 16, 4<<10

	l := &fakeLog{}
	ts := hlc.New(100, 0)
	grow := func(n int) {
		prev, first := l.LastCommitted(), len(l.ts)
		defer func() {
			if tapped && l.tapFn != nil && rng.IntN(10) != 0 {
				l.tapFn(prev, l.LastCommitted(), func(fn func(hlc.Timestamp, bsoncore.Document)) {
					for i := first; i < len(l.ts); i++ {
						fn(l.ts[i], l.entries[i])
					}
				})
			}
		}()
		for range n {
			ts += hlc.Timestamp(1 + rng.IntN(2))
			i := int(ts)
			ns := []string{"db.a", "db.b", "other.a"}[rng.IntN(3)]
			switch rng.IntN(10) {
			case 0:
				var ops bson.A
				for j := range 1 + rng.IntN(3) {
					ops = append(ops, op("i", ns, bson.D{{Key: "_id", Value: i*10 + j}}, nil))
				}
				l.add(ts, logEntry(t, ts, bson.D{{Key: "lsid", Value: bson.D{{Key: "id", Value: 1}}}, {Key: "txnNumber", Value: int64(i)}, {Key: "op", Value: "c"}, {Key: "ns", Value: "admin.$cmd"}, {Key: "o", Value: bson.D{{Key: "applyOps", Value: ops}}}}))
			case 1:
				l.add(ts, logEntry(t, ts, op("u", ns, bson.D{{Key: "$v", Value: 2}, {Key: "diff", Value: bson.D{{Key: "u", Value: bson.D{{Key: "v", Value: i}}}}}}, bson.D{{Key: "_id", Value: i}})))
			case 2:
				l.add(ts, logEntry(t, ts, op("c", "db.$cmd", bson.D{{Key: "create", Value: "z"}}, nil)))
			default:
				l.add(ts, logEntry(t, ts, op([]string{"i", "d"}[rng.IntN(2)], ns, bson.D{{Key: "_id", Value: i}}, nil)))
			}
		}
	}
	grow(5)
	type pair struct {
		name           string
		viaFeed, alone *Stream
	}
	f := NewFeed(l)
	var pairs []pair
	openPair := func(scope Scope, spec Spec) {
		if spec.FullDocument == "" {
			spec.FullDocument = "default"
		}
		if spec.FullDocumentBeforeChange == "" {
			spec.FullDocumentBeforeChange = "off"
		}
		a, err := f.Open(context.Background(), scope, spec)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Open(context.Background(), l, scope, spec)
		if err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, pair{fmt.Sprintf("%d: %v %+v", len(pairs), scope, spec), a, b})
	}
	for range 3 {
		openPair(Scope{DB: "db", Coll: "a"}, Spec{})
	}
	openPair(Scope{DB: "db"}, Spec{ShowExpandedEvents: true})
	openPair(Scope{}, Spec{FullDocumentBeforeChange: "whenAvailable"})
	openPair(Scope{DB: "db", Coll: "b"}, Spec{HasStartAt: true, StartAtOperationTime: l.ts[0]})
	for round := range 300 {
		grow(rng.IntN(6))
		if round == 200 {
			// More than one fill reads, then a stream at the end: the
			// window starts again there.
			grow(readEntries + 100)
			openPair(Scope{DB: "db", Coll: "a"}, Spec{})
			pairs = append(pairs[len(pairs)-1:], pairs[:len(pairs)-1]...) // it reads first
		}
		if round == 100 {
			first := pairs[0].alone.ResumeToken()
			tok, err := ParseToken(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: first})
			if err != nil {
				t.Fatal(err)
			}
			openPair(Scope{DB: "db", Coll: "a"}, Spec{ResumeAfter: &tok})
		}
		for _, p := range pairs {
			if rng.IntN(3) == 0 {
				continue // this one does not read this round: it falls behind
			}
			for range 1 + rng.IntN(3*readEvents) {
				a, err := p.viaFeed.Next()
				if err != nil {
					t.Fatal(err)
				}
				b, err := p.alone.Next()
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(a, b) {
					t.Fatalf("round %d, stream %s: through the feed %v, alone %v", round, p.name, a, b)
				}
				if ra, rb := p.viaFeed.ResumeToken(), p.alone.ResumeToken(); !bytes.Equal(ra, rb) {
					t.Fatalf("round %d, stream %s: resume token through the feed %v, alone %v", round, p.name, ra, rb)
				}
				if a == nil {
					break
				}
			}
		}
		if len(f.entries) > feedEntries || f.bytes > feedBytes+2<<10 {
			t.Fatalf("round %d: the window holds %d entries, %d bytes", round, len(f.entries), f.bytes)
		}
	}
	return f.fills
}

// TestFeedConcurrentStreams: streams of one Feed read in their own
// goroutines while a writer inserts into a real engine; each sees every
// insert once, in order (run with -race: the Feed is shared).
func TestFeedConcurrentStreams(t *testing.T) {
	e, err := engine.Open(t.TempDir(), engine.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	f := NewFeed(EngineLog(e))
	const streams, n = 4, 300
	var ss []*Stream
	for range streams {
		s, err := f.Open(context.Background(), Scope{DB: "db", Coll: "c"}, Spec{FullDocument: "default", FullDocumentBeforeChange: "off"})
		if err != nil {
			t.Fatal(err)
		}
		ss = append(ss, s)
	}
	errs := make(chan error, streams)
	for _, s := range ss {
		go func() {
			want := int32(0)
			deadline := time.Now().Add(60 * time.Second)
			for want < n && time.Now().Before(deadline) {
				d, err := s.Next()
				if err != nil {
					errs <- err
					return
				}
				if d == nil {
					time.Sleep(time.Millisecond)
					continue
				}
				if id := d.Lookup("documentKey", "_id").Int32(); id != want {
					errs <- fmt.Errorf("event for _id %d, want %d", id, want)
					return
				}
				want++
			}
			if want != n {
				errs <- fmt.Errorf("%d events of %d", want, n)
				return
			}
			errs <- nil
		}()
	}
	ns := engine.Namespace{DB: "db", Coll: "c"}
	for i := range n {
		if _, err := e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{Key: "_id", Value: int32(i)}})}, true); err != nil {
			t.Fatal(err)
		}
	}
	for range streams {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
