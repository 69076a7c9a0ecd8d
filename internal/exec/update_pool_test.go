package exec

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/invariants"
	"github.com/cairndb/cairn/internal/query"
	"github.com/cairndb/cairn/internal/update"
)

// TestUpdateStateFromPool checks invariant "An update's state from a
// pool": runUpdate's state is pooled, and no statement's result carries
// anything of the one before. Statements of every kind one after another —
// a point update, a point update that finds nothing, a point upsert, a
// findAndModify, a no-op, a multi-update, a findAndModify that finds
// nothing — twice over, each result compared whole with its own.
func TestUpdateStateFromPool(t *testing.T) {
	eng := openTestEngine(t)
	ns := engine.Namespace{DB: "db", Coll: "c"}
	insertD(t, eng, ns, 4, func(i int) bson.D { return bson.D{{Key: "_id", Value: int32(i)}, {Key: "a", Value: int32(0)}} })
	x := New(eng)
	type want struct {
		matched, modified int64
		upserted          bool
		before, after     string // findAndModify's images' a, "" for none (set in the loop)
	}
	for round := range 2 {
		next := int32(round*10 + 1)
		for _, st := range []struct {
			name         string
			filter, set  bson.D
			upsert, find bool
			multi        bool
			want         want
		}{
			{"point", bson.D{{Key: "_id", Value: int32(1)}}, bson.D{{Key: "a", Value: next}}, false, false, false, want{matched: 1, modified: 1}},
			{"point, nothing found", bson.D{{Key: "_id", Value: int32(100 + round)}}, bson.D{{Key: "a", Value: next}}, false, false, false, want{}},
			{"point upsert", bson.D{{Key: "_id", Value: int32(200 + round)}}, bson.D{{Key: "a", Value: next}}, true, false, false, want{upserted: true}},
			{"findAndModify", bson.D{{Key: "_id", Value: int32(2)}}, bson.D{{Key: "a", Value: next}}, false, true, false, want{matched: 1, modified: 1, before: "set", after: "set"}},
			{"no-op", bson.D{{Key: "_id", Value: int32(1)}}, bson.D{{Key: "a", Value: next}}, false, false, false, want{matched: 1}},
			{"multi", bson.D{{Key: "a", Value: bson.D{{Key: "$gte", Value: int32(0)}}}}, bson.D{{Key: "b", Value: next}}, false, false, true, want{matched: -1}}, // set in the loop
			{"findAndModify, nothing found", bson.D{{Key: "_id", Value: int32(300)}}, bson.D{{Key: "a", Value: next}}, false, true, false, want{}},
		} {
			f, _ := bson.Marshal(st.filter)
			sel, err := NewSelection(ns, f, query.Options{})
			if err != nil {
				t.Fatal(err)
			}
			m, _ := bson.Marshal(bson.D{{Key: "$set", Value: st.set}})
			u, err := update.ParseDocument(m, update.Options{})
			if err != nil {
				t.Fatal(err)
			}
			spec := Update{Sel: sel, Mod: u, Upsert: st.upsert, Multi: st.multi}
			var res UpdateResult
			if st.find {
				res, err = x.FindAndUpdate(context.Background(), spec)
			} else {
				res, err = x.Update(context.Background(), spec)
			}
			if err != nil {
				t.Fatalf("round %d, %s: %v", round, st.name, err)
			}
			a := func(d bsoncore.Document) string {
				if d == nil {
					return ""
				}
				return d.Lookup("a").DebugString()
			}
			w := st.want
			if w.matched < 0 { // four inserted, and one upserted a round
				w.matched, w.modified = int64(5+round), int64(5+round)
			}
			if w.after != "" { // document 2's a: 0, then 1 after round 0
				w.before, w.after = i32(int32(round)), i32(next)
			}
			got := want{matched: res.Matched, modified: res.Modified, upserted: res.UpsertedID.Type != 0, before: a(res.Before), after: a(res.After)}
			if got != w {
				t.Errorf("round %d, %s: %+v, want %+v", round, st.name, got, w)
			}
		}
	}
}

// i32 is v as a's DebugString shows it.
func i32(v int32) string {
	return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, v)}.DebugString()
}

// TestPointUpdateAllocs bounds the allocations of an update by _id through
// Env.Update (a flat $set, parsed once outside the loop): 2 with its state
// and callbacks pooled ("An update's state from a pool", "A Modify's
// request from a pool"), 8 before. The storage pipeline's own
// allocations (a goroutine of its own) are counted too: the bound has one
// to spare for them.
func TestPointUpdateAllocs(t *testing.T) {
	const bound = 3
	eng := openTestEngine(t)
	ns := engine.Namespace{DB: "db", Coll: "c"}
	insertD(t, eng, ns, 1, func(i int) bson.D { return bson.D{{Key: "_id", Value: int32(i)}, {Key: "a", Value: int32(0)}} })
	x := New(eng)
	f, _ := bson.Marshal(bson.D{{Key: "_id", Value: int32(0)}})
	sel, err := NewSelection(ns, f, query.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var mods [2]*update.Update
	for i := range mods {
		m, _ := bson.Marshal(bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: int32(i)}}}})
		if mods[i], err = update.ParseDocument(m, update.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	i := 0
	run := func() {
		i++
		res, err := x.Update(context.Background(), Update{Sel: sel, Mod: mods[i%2]})
		if err != nil || res.Modified != 1 {
			t.Fatalf("update %d: %+v, %v", i, res, err)
		}
	}
	run()
	if n := testing.AllocsPerRun(1000, run); raceEnabled || invariants.Enabled {
		t.Logf("allocations not compared in this build: %.1f", n)
	} else if n > bound {
		t.Errorf("%.1f allocations per point update, want at most %d", n, bound)
	} else {
		t.Logf("%.1f allocations per point update (bound %d)", n, bound)
	}
}
