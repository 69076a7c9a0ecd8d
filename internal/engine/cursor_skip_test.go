package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestCursorSkip: after Skip(k) a cursor's next entry is the first at or
// after k (forward) or the last before k (reverse), within its range, and
// it steps on normally from there; for a plain reader, one that waits on
// prepare conflicts, one as of a time (walking the history) and one
// inside a transaction.
func TestCursorSkip(t *testing.T) {
	e := openEngine(t, "")
	ns := Namespace{"db", "skip"}
	// Versioned, so that a reader as of a time walks the history; _ids
	// 50 and 52 have two versions each.
	if err := e.CreateCollection(ns, bson.Raw(doc(t, bson.D{{"versioning", bson.D{{"enabled", true}}}}))); err != nil {
		t.Fatal(err)
	}
	var docs []bsoncore.Document
	for i := 0; i < 100; i += 2 { // even _ids 0..98
		docs = append(docs, doc(t, bson.D{{"_id", i}}))
	}
	if _, err := e.Insert(ns, docs, true); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int32{50, 52} {
		if _, err := e.Replace(ns, val(t, i), doc(t, bson.D{{"_id", i}, {"v", 2}})); err != nil {
			t.Fatal(err)
		}
	}
	at := e.db.LastCommitted()
	readers := map[string]func() (*Reader, func()){
		"plain": func() (*Reader, func()) {
			r, err := e.NewReader(ns)
			if err != nil {
				t.Fatal(err)
			}
			return r, func() { _ = r.Close() }
		},
		"prepare conflicts": func() (*Reader, func()) {
			r, err := e.NewReader(ns)
			if err != nil {
				t.Fatal(err)
			}
			r.PrepareConflicts(context.Background())
			return r, func() { _ = r.Close() }
		},
		"as of a time": func() (*Reader, func()) {
			r, err := e.NewReaderAt(ns, at)
			if err != nil {
				t.Fatal(err)
			}
			return r, func() { _ = r.Close() }
		},
		"transaction": func() (*Reader, func()) {
			tx := e.Begin()
			r, err := e.NewReaderIn(tx, ns)
			if err != nil {
				t.Fatal(err)
			}
			return r, tx.Abort
		},
	}
	for _, tc := range []struct {
		name    string
		rng     [2]int // _id range [lo, hi); -1: open
		reverse bool
		skipTo  int // skipped to after the first entry
		want    []int
	}{
		{"forward to a key present", [2]int{-1, -1}, false, 50, []int{0, 50, 52}},
		{"forward to a key absent", [2]int{-1, -1}, false, 51, []int{0, 52, 54}},
		{"forward past the range", [2]int{10, 20}, false, 30, []int{10}},
		{"reverse to a key present", [2]int{-1, -1}, true, 50, []int{98, 48, 46}},
		{"reverse to a key absent", [2]int{-1, -1}, true, 51, []int{98, 50, 48}},
		{"reverse below the range", [2]int{10, 20}, true, 4, []int{18}},
	} {
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for k := range readers {
				if !yield(k) {
					return
				}
			}
		}) {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				r, done := readers[name]()
				defer done()
				var rng KeyRange
				if tc.rng[0] >= 0 {
					rng.Lo = appendIDKey(nil, val(t, int32(tc.rng[0])))
				}
				if tc.rng[1] >= 0 {
					rng.Hi = appendIDKey(nil, val(t, int32(tc.rng[1])))
				}
				c, err := r.Docs(rng, tc.reverse)
				if err != nil {
					t.Fatal(err)
				}
				var got []int
				for len(got) < len(tc.want) && c.Next() {
					d, err := c.Value()
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, int(d.Lookup("_id").Int32()))
					if len(got) == 1 {
						c.Skip(appendIDKey(nil, val(t, int32(tc.skipTo))))
					}
				}
				if err := c.Close(); err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(got) != fmt.Sprint(tc.want) {
					t.Fatalf("read %v, want %v", got, tc.want)
				}
			})
		}
	}
}
