package commands

import (
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
