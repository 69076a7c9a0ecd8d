package engine

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// TestSnapshotHistory checks "A held view is exact from its time": reads
// of a plain collection at a cluster time see exactly the state at that
// time (a point read and a scan, through a reader that outlives later
// writes, as a cursor's getMore does); a time no held view holds exactly
// (a write committed while no view was taken), one from before the
// history and one in the future are refused; a standalone refuses all.
func TestSnapshotHistory(t *testing.T) {
	e := openEngine(t, "")
	ns := Namespace{"db", "c"}
	set := func(x int) hlc.Timestamp {
		t.Helper()
		d := doc(t, bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: x}})
		var err error
		if x == 0 {
			_, err = e.Insert(ns, []bsoncore.Document{d}, true)
		} else {
			_, err = e.Replace(ns, val(t, 1), d)
		}
		if err != nil {
			t.Fatal(err)
		}
		return e.db.LastCommitted()
	}
	xAt := func(at hlc.Timestamp) (int, error) {
		t.Helper()
		d, found, err := e.GetAt(nil, ns, val(t, 1), at)
		if err != nil || !found {
			return -1, err
		}
		r, err := e.NewReaderAt(ns, at)
		if err != nil {
			return -1, err
		}
		defer r.Close()
		cur, err := r.Docs(KeyRange{}, false)
		if err != nil {
			return -1, err
		}
		defer cur.Close()
		if !cur.Next() || docX(t, cur) != bsoncore.Document(d).Lookup("x").AsInt64() {
			t.Fatalf("at %v the scan and the point read disagree", at)
		}
		return int(bsoncore.Document(d).Lookup("x").AsInt64()), nil
	}
	before := set(0)
	if _, err := e.NewReaderAt(ns, before); mongoerr.CodeOf(err) != mongoerr.NoReplicationEnabled {
		t.Fatalf("a standalone's snapshot read: %v, want NoReplicationEnabled", err)
	}
	e.AllowSnapshotHistory()
	t1 := set(1)
	start, err := e.SnapshotNow()
	if err != nil || start != t1 {
		t.Fatalf("SnapshotNow = %v, %v, want the last write's time %v", start, err, t1)
	}
	t2 := set(2)
	held, err := e.NewReaderAt(ns, t2) // a cursor open across the next writes
	if err != nil {
		t.Fatal(err)
	}
	t3 := set(3)
	for _, c := range []struct {
		at   hlc.Timestamp
		want int
	}{{t1, 1}, {t2, 2}, {t3, 3}} {
		if got, err := xAt(c.at); err != nil || got != c.want {
			t.Errorf("at %v: x=%d, %v; want %d", c.at, got, err, c.want)
		}
	}
	cur, err := held.Docs(KeyRange{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if !cur.Next() || docX(t, cur) != 2 {
		t.Error("a reader opened at t2 sees a later write")
	}
	_ = cur.Close()
	_ = held.Close()
	if _, err := xAt(before); mongoerr.CodeOf(err) != mongoerr.SnapshotTooOld {
		t.Errorf("a time before the history: %v, want SnapshotTooOld", err)
	}
	if _, err := xAt(t3 + 1<<32); mongoerr.CodeOf(err) != mongoerr.InvalidOptions {
		t.Errorf("a future time: %v, want InvalidOptions", err)
	}
	// A window of 0 stops the views after commits: t4 and t5 are not
	// held, and the view of t3 must not answer for t4.
	e.SetSnapshotHistoryWindow(0)
	t4 := set(4)
	t5 := set(5)
	if got, err := xAt(t4); mongoerr.CodeOf(err) != mongoerr.SnapshotTooOld {
		t.Errorf("a time no view holds exactly: x=%d, %v, want SnapshotTooOld", got, err)
	}
	if got, err := xAt(t5); err != nil || got != 5 {
		t.Errorf("at the present without a view held: x=%d, %v, want a new view's 5", got, err)
	}
	if got, err := xAt(t3); err != nil || got != 3 {
		t.Errorf("at t3 after later writes: x=%d, %v", got, err)
	}
}

// TestSnapshotHistoryWindow: views whose successors are older than
// minSnapshotHistoryWindowInSeconds are dropped as commits go on (a read
// at their times is then SnapshotTooOld), the newest stays.
func TestSnapshotHistoryWindow(t *testing.T) {
	e := openEngine(t, "")
	ns := Namespace{"db", "c"}
	set := func(x int) hlc.Timestamp {
		t.Helper()
		if _, err := e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{Key: "_id", Value: x}})}, true); err != nil {
			t.Fatal(err)
		}
		return e.db.LastCommitted()
	}
	e.AllowSnapshotHistory()
	t1 := set(1)
	if _, err := e.SnapshotNow(); err != nil {
		t.Fatal(err)
	}
	set(2)
	set(3)
	if n := len(e.snaps.views); n < 3 {
		t.Fatalf("%d views held after three commits with the history active, want 3", n)
	}
	wall := e.now
	e.now = func() time.Time { return wall().Add(400 * time.Second) } // past the 300 s window
	e.SetSnapshotHistoryWindow(DefaultSnapshotHistoryWindow)
	t4 := set(4)
	if n := len(e.snaps.views); n != 1 {
		t.Errorf("%d views held once the older ones are past the window, want the newest", n)
	}
	if _, _, err := e.GetAt(nil, ns, val(t, 1), t1); mongoerr.CodeOf(err) != mongoerr.SnapshotTooOld {
		t.Errorf("a read at a dropped view's time: %v, want SnapshotTooOld", err)
	}
	if _, found, err := e.GetAt(nil, ns, val(t, 4), t4); err != nil || !found {
		t.Errorf("a read at the newest view's time: found %v, %v", found, err)
	}
}

func docX(t *testing.T, c *Cursor) int64 {
	t.Helper()
	d, err := c.Value()
	if err != nil {
		t.Fatal(err)
	}
	return d.Lookup("x").AsInt64()
}
