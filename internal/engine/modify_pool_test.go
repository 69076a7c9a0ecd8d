package engine

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestModifyRequestsFromPool checks invariant "A Modify's request from a
// pool": ModifyWith's requests reuse pooled state, and no result carries
// anything of an earlier one. Goroutines each update a document of their
// own over and over beside an _id that does not exist, alternating
// KeepStored and an error for the missing document, and every result must
// be exactly this call's: one match, one modification, the stored image
// only when asked, the error only when returned. Run it under -race: the
// state is shared between the caller's goroutine and the pipeline's.
func TestModifyRequestsFromPool(t *testing.T) {
	e := openEngine(t, "")
	ns := Namespace{"db", "pooled"}
	const workers, each = 8, 150
	for g := range workers {
		if _, err := e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{"_id", g}, {"n", int64(0)}})}, true); err != nil {
			t.Fatal(err)
		}
	}
	errMissing := errors.New("missing")
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids := []bsoncore.Value{val(t, g), val(t, fmt.Sprintf("absent%d", g))}
			for i := range each {
				keep, fail := i%2 == 0, i%3 == 0
				next, _ := bson.Marshal(bson.D{{"_id", g}, {"n", int64(i + 1)}})
				res, err := e.ModifyWith(ns, ids, ModifyOptions{}, func(k int, cur bsoncore.Document) (Action, error) {
					if k == 1 {
						if fail {
							return Action{}, errMissing
						}
						return Action{}, nil
					}
					if n := cur.Lookup("n").Int64(); n != int64(i) {
						return Action{}, fmt.Errorf("goroutine %d call %d read n = %d", g, i, n)
					}
					return Action{Replace: next, KeepStored: keep}, nil
				})
				if err != nil {
					t.Error(err)
					return
				}
				wantErrs := 0
				if fail {
					wantErrs = 1
				}
				switch {
				case res.Matched != 1 || res.Modified != 1 || res.Deleted != 0 || res.Inserted != 0:
					t.Errorf("goroutine %d call %d: %+v, want one match and one modification", g, i, res)
				case len(res.Errors) != wantErrs || fail && (res.Errors[0].Index != 1 || res.Errors[0].Err != errMissing):
					t.Errorf("goroutine %d call %d: errors %v, want %d (the missing document's)", g, i, res.Errors, wantErrs)
				case keep && string(res.Stored) != string(next), !keep && res.Stored != nil:
					t.Errorf("goroutine %d call %d (keep %v): stored %v, want %v", g, i, keep, bson.Raw(res.Stored), bson.Raw(next))
				default:
					continue
				}
				return
			}
		}()
	}
	wg.Wait()
}
