package commands

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestChangeStreamPace checks the pace of a change stream's getMores
// (changestream.go): none for a stream alone; otherwise the time
// paceEvents events took at the last batch's rate, kept between the floor
// and the ceiling the other open streams set.
func TestChangeStreamPace(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name string
		open int64
		n    int64
		gap  time.Duration
		want time.Duration
	}{
		{"a stream alone, however slow its flow", 1, 1, time.Second, 0},
		{"a stream alone, no batch yet", 1, 0, 0, 0},
		{"ten streams, no batch yet: the floor", 10, 0, 0, 4500 * time.Microsecond},
		{"ten streams, a fast flow: the floor", 10, 200, 5 * ms, 4500 * time.Microsecond},
		{"ten streams, paceEvents in 6 ms: 6 ms", 10, 64, 6 * ms, 6 * ms},
		{"ten streams, 32 events in 4 ms: 8 ms", 10, 32, 4 * ms, 8 * ms},
		{"ten streams, a slow flow: the ceiling", 10, 18, 4500 * time.Microsecond, 9 * ms},
		{"ten streams, after a quiet spell: the ceiling", 10, 1, time.Hour, 9 * ms},
		{"two streams, a slow flow: one ms", 2, 4, 2 * ms, ms},
		{"two streams, a fast flow: half a ms", 2, 500, ms, 500 * time.Microsecond},
		{"thirty streams, a slow flow: maxPace", 30, 1, 10 * ms, maxPace},
		{"thirty streams, a fast flow: floorCap", 30, 1000, 5 * ms, floorCap},
	} {
		if got := pace(tc.open, tc.n, tc.gap); got != tc.want {
			t.Errorf("%s: pace(%d, %d, %v) = %v, want %v", tc.name, tc.open, tc.n, tc.gap, got, tc.want)
		}
	}
}

// TestChangeStreamPaceRate checks the rate a cursor's batches give its
// next pace (sentEvents): the events of a batch over the time since the
// batch before; a full batch (batchSize reached, or an event held) gives
// the floor, as does a first batch.
func TestChangeStreamPaceRate(t *testing.T) {
	ms := time.Millisecond
	t0 := time.Unix(1000, 0)
	type batch struct {
		at   time.Duration
		n    int64
		full bool
	}
	for _, tc := range []struct {
		name    string
		batches []batch
		want    time.Duration // ten streams open
	}{
		{"a first batch: the floor", []batch{{0, 5, false}}, 4500 * time.Microsecond},
		{"16 events 4 ms after the last: 16 ms, the ceiling", []batch{{0, 5, false}, {4 * ms, 16, false}}, 9 * ms},
		{"40 events 5 ms after the last: 8 ms", []batch{{0, 5, false}, {5 * ms, 40, false}}, 8 * ms},
		{"a full batch of 10: the floor", []batch{{0, 5, false}, {9 * ms, 10, true}}, 4500 * time.Microsecond},
		{"a batch after a full one: its own rate", []batch{{0, 5, false}, {9 * ms, 10, true}, {15 * ms, 48, false}}, 8 * ms},
	} {
		var c csCursor
		for _, b := range tc.batches {
			c.sentEvents(t0.Add(b.at), b.n, b.full)
		}
		if got := pace(10, c.lastN, c.gap); got != tc.want {
			t.Errorf("%s: pace %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestChangeStreamRelease checks when a paced getMore may return its batch
// (paceTicks.release), over the calls of several cursors on one node: a
// tick another cursor set, within the floor and the ceiling after the
// cursor's last batch and nearest to its pace, or its pace on, set for the
// others; never a tick past; nothing for a stream alone or before a first
// batch.
func TestChangeStreamRelease(t *testing.T) {
	ms := time.Millisecond
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	type call struct {
		now, sent time.Time
		open, n   int64
		gap       time.Duration
		want      time.Time // zero: no pace
	}
	// Ten streams: floor 4.5 ms, ceiling 9 ms; 18 events 4.5 ms after the
	// batch before: the ceiling; 200 in 5 ms: the floor; 32 in 4: 8 ms;
	// 64 in 7: 7 ms.
	slow := func(now, sent, want time.Time) call { return call{now, sent, 10, 18, 4500 * time.Microsecond, want} }
	fast := func(now, sent, want time.Time) call { return call{now, sent, 10, 200, 5 * ms, want} }
	seven := func(now, sent, want time.Time) call { return call{now, sent, 10, 64, 7 * ms, want} } // a pace of 7 ms
	for _, tc := range []struct {
		name  string
		calls []call
	}{
		{"a stream alone", []call{{at(ms), t0, 1, 10, ms, time.Time{}}}},
		{"no batch yet", []call{{at(ms), time.Time{}, 10, 0, 0, time.Time{}}}},
		{"the first sets its pace", []call{slow(at(ms), t0, at(9*ms))}},
		{"the others of its batch take its tick", []call{
			slow(at(ms), t0, at(9*ms)), slow(at(2*ms), t0, at(9*ms)), slow(at(3*ms), t0, at(9*ms))}},
		{"a later batch takes an earlier tick within its bounds", []call{
			slow(at(ms), t0, at(9*ms)), slow(at(2*ms), at(ms/2), at(9*ms))}},
		{"a slower batch takes a later tick within its ceiling", []call{
			slow(at(ms), t0, at(9*ms)), {at(2 * ms), t0, 10, 32, 4 * ms, at(9 * ms)}}},
		{"a tick past the ceiling is not taken", []call{
			slow(at(ms), at(ms), at(10*ms)), slow(at(2*ms), t0, at(9*ms))}},
		{"a tick before the floor is not taken", []call{
			fast(at(ms), t0, at(4500*time.Microsecond)), fast(at(ms), at(ms), at(5500*time.Microsecond))}},
		{"a faster flow is not held for a slower one's tick", []call{
			slow(at(ms), t0, at(9*ms)), fast(at(ms), t0, at(4500*time.Microsecond))}},
		{"the nearest of two ticks", []call{
			slow(at(ms), at(-2*ms), at(7*ms)), seven(at(4*ms), at(3*ms), at(10*ms)), seven(at(4*ms), at(2*ms), at(10*ms))}},
		{"the earlier of two as near", []call{
			slow(at(ms), at(-2*ms), at(7*ms)), seven(at(4*ms), at(3*ms), at(10*ms)), seven(at(4*ms), at(ms+ms/2), at(7*ms))}},
		{"a tick past is not taken", []call{
			slow(at(ms), t0, at(9*ms)), slow(at(10*ms), at(2*ms), at(11*ms))}},
		{"behind its pace, no tick within the ceiling: at once", []call{
			slow(at(ms), t0, at(9*ms)), slow(at(12*ms), at(ms), at(10*ms))}},
		{"behind, a tick within its ceiling: that tick", []call{
			slow(at(ms), t0, at(9*ms)), slow(at(7*ms), at(-ms/2), at(8*ms+ms/2)), slow(at(8*ms), at(-ms/2), at(8*ms+ms/2))}},
	} {
		var p paceTicks
		for i, c := range tc.calls {
			got := p.release(c.now, c.sent, c.open, c.n, c.gap)
			if !got.Equal(c.want) {
				t.Errorf("%s, call %d: release at %v, want %v", tc.name, i, got.Sub(t0), c.want.Sub(t0))
			}
		}
	}
}

// TestChangeStreamReleaseBounds checks release over random calls (batch
// times, rates, open streams, the clock): a wait always ends between the
// floor and the ceiling after the last batch, at most half a floor past
// its pace, and no getMore goes at once before its pace passed.
func TestChangeStreamReleaseBounds(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	now := time.Unix(1_700_000_000, 0)
	var p paceTicks
	for range 200000 {
		now = now.Add(time.Duration(rng.Int64N(int64(time.Millisecond))))
		open := 2 + rng.Int64N(12)
		sent := now.Add(-time.Duration(rng.Int64N(int64(15 * time.Millisecond))))
		n := rng.Int64N(300)
		gap := time.Duration(rng.Int64N(int64(20 * time.Millisecond)))
		floor, ceil := paceBounds(open)
		pc := pace(open, n, gap)
		at := p.release(now, sent, open, n, gap)
		switch d := at.Sub(sent); {
		case !at.After(now):
			if sent.Add(pc).After(now) {
				t.Fatalf("release(%v, sent %v, %d, %d, %v) at once, before the pace %v passed", now, sent, open, n, gap, pc)
			}
		case d < floor || d > ceil || d > pc+floor/2:
			t.Fatalf("release(%v, sent %v, %d, %d, %v) = sent + %v: want within [%v, %v] and at most %v", now, sent, open, n, gap, d, floor, ceil, pc+floor/2)
		}
		if len(p.ticks) > maxTicks {
			t.Fatalf("%d ticks kept", len(p.ticks))
		}
	}
}

// TestChangeStreamPaceWait checks that a getMore waiting out its pace
// tells the connection it is in a short wait (Session.ShortWait: the
// server does not watch the socket meanwhile) and out of it again,
// whether the timer or the operation's end ends the wait, and that the
// wait lasts its pause or ends with the operation's error.
func TestChangeStreamPaceWait(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pause   time.Duration
		cancel  bool // the operation ends during the wait
		hook    bool // the server set ShortWait
		wantErr bool
	}{
		{"the timer ends it", 3 * time.Millisecond, false, true, false},
		{"the operation's end ends it", time.Minute, true, true, true},
		{"no hook set (an embedded session)", 3 * time.Millisecond, false, false, false},
		{"no hook, the operation's end", time.Minute, true, false, true},
	} {
		s := &Session{}
		var calls []bool
		if tc.hook {
			s.ShortWait = func(waiting bool) { calls = append(calls, waiting) }
		}
		ctx, cancel := context.WithCancel(context.Background())
		if tc.cancel {
			time.AfterFunc(5*time.Millisecond, cancel)
		}
		began := time.Now()
		err := s.paceWait(ctx, tc.pause)
		took := time.Since(began)
		cancel()
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: err %v, want an error: %v", tc.name, err, tc.wantErr)
		}
		if !tc.cancel && took < tc.pause {
			t.Errorf("%s: returned after %v, before its pause %v", tc.name, took, tc.pause)
		}
		want := []bool(nil)
		if tc.hook {
			want = []bool{true, false}
		}
		if !slices.Equal(calls, want) {
			t.Errorf("%s: ShortWait calls %v, want %v", tc.name, calls, want)
		}
	}
}
