package exec

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
)

// TestPointReadAgreesWithPlan runs {_id: v} selections both ways the
// planner answers them: the running IDHACK plan, which reads without a
// snapshot (planner.Open), and the same query planned in Explain mode over
// a snapshot (planner.Prepare). Skip, sort, limit, projection (positional
// too), a missing _id and a missing collection must give the same results.
func TestPointReadAgreesWithPlan(t *testing.T) {
	eng := openTestEngine(t)
	ns := engine.Namespace{DB: "db", Coll: "c"}
	insertD(t, eng, ns, 5, func(i int) bson.D {
		return bson.D{{Key: "_id", Value: i}, {Key: "a", Value: bson.A{i, i + 1}}, {Key: "b", Value: "x"}}
	})
	x := New(eng)
	for _, tc := range []struct {
		name   string
		coll   string
		filter bson.D
		set    func(*Selection) error
		want   int // results
		// wantCode: both fail with this MongoDB code instead.
		wantCode mongoerr.Code
	}{
		{name: "found", filter: bson.D{{Key: "_id", Value: 3}}, want: 1},
		{name: "missing id", filter: bson.D{{Key: "_id", Value: 42}}, want: 0},
		{name: "missing collection", coll: "none", filter: bson.D{{Key: "_id", Value: 3}}, want: 0},
		{name: "skip", filter: bson.D{{Key: "_id", Value: 3}}, set: func(s *Selection) error { s.Skip = 1; return nil }, want: 0},
		{name: "limit and sort", filter: bson.D{{Key: "_id", Value: 3}}, set: func(s *Selection) error {
			s.Limit = 5
			return s.SetSort(mustDoc(t, bson.D{{Key: "b", Value: -1}}))
		}, want: 1},
		{name: "projection", filter: bson.D{{Key: "_id", Value: 2}}, set: func(s *Selection) error {
			return s.SetProjection(mustDoc(t, bson.D{{Key: "b", Value: 0}}))
		}, want: 1},
		// The filter binds no array position: both refuse (51246).
		{name: "positional projection", filter: bson.D{{Key: "_id", Value: 2}}, set: func(s *Selection) error {
			return s.SetProjection(mustDoc(t, bson.D{{Key: "a.$", Value: 1}}))
		}, wantCode: 51246},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := ns
			if tc.coll != "" {
				target.Coll = tc.coll
			}
			sel, err := NewSelection(target, mustDoc(t, tc.filter), query.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.set != nil {
				if err := tc.set(&sel); err != nil {
					t.Fatal(err)
				}
			}
			run, runErr := drain(x.Open(context.Background(), sel, Run))
			planned, planErr := drain(x.Open(context.Background(), sel, Explain))
			if tc.wantCode != 0 {
				if mongoerr.CodeOf(runErr) != tc.wantCode || mongoerr.CodeOf(planErr) != tc.wantCode {
					t.Errorf("point read: %v, planned: %v; want code %d from both", runErr, planErr, tc.wantCode)
				}
				return
			}
			if runErr != nil || planErr != nil {
				t.Fatalf("point read: %v, planned: %v", runErr, planErr)
			}
			if len(run) != tc.want || fmt.Sprint(run) != fmt.Sprint(planned) {
				t.Errorf("point read %v, planned %v; want %d results", run, planned, tc.want)
			}
		})
	}
}

func mustDoc(t *testing.T, d bson.D) bsoncore.Document {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// drain reads a plan to its end and closes it, keeping copies of results
// as extended JSON.
func drain(src interface {
	Next() (bsoncore.Document, error)
	Close() error
}, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	defer src.Close()
	var out []string
	for {
		d, err := src.Next()
		if err != nil || d == nil {
			return out, err
		}
		out = append(out, bson.Raw(bytes.Clone(d)).String())
	}
}

// TestExpressAgreesWithOpen: Express reads what the running point read
// (Open's IDHACK plan) returns for a found, a missing and an equal-valued
// _id and a missing collection, appended to what dst held, and counts the
// same _id index accesses; Expressible refuses the Envs Open narrows (a
// transaction's, a shard's ownership filter of the collection) and only
// those.
func TestExpressAgreesWithOpen(t *testing.T) {
	eng := openTestEngine(t)
	ns := engine.Namespace{DB: "db", Coll: "c"}
	d, _ := bson.Marshal(bson.D{{Key: "_id", Value: "k"}, {Key: "a", Value: 1}})
	d2, _ := bson.Marshal(bson.D{{Key: "_id", Value: int64(5)}, {Key: "a", Value: 2}})
	if _, err := eng.Insert(ns, []bsoncore.Document{d, d2}, true); err != nil {
		t.Fatal(err)
	}
	x := New(eng)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		coll string
		id   any
	}{{"found", "c", "k"}, {"missing", "c", "j"}, {"int equal to a long", "c", int32(5)}, {"missing collection", "none", "k"}} {
		t.Run(tc.name, func(t *testing.T) {
			target := engine.Namespace{DB: "db", Coll: tc.coll}
			filter := mustDoc(t, bson.D{{Key: "_id", Value: tc.id}})
			sel, err := NewSelection(target, filter, query.Options{})
			if err != nil {
				t.Fatal(err)
			}
			before := eng.IndexAccesses(ns, "_id_").Ops
			src, err := x.Open(ctx, sel, Run)
			if err != nil {
				t.Fatal(err)
			}
			want, err := src.Next()
			if err != nil {
				t.Fatal(err)
			}
			want = append(bsoncore.Document(nil), want...)
			_ = src.Close()
			mid := eng.IndexAccesses(ns, "_id_").Ops
			id, _ := sel.Filter.IDEquality()
			got, found, err := x.Express(ctx, []byte("prefix"), target, id)
			if err != nil {
				t.Fatal(err)
			}
			after := eng.IndexAccesses(ns, "_id_").Ops
			if !bytes.HasPrefix(got, []byte("prefix")) || found != (want != nil) || !bytes.Equal(got[len("prefix"):], want) {
				t.Errorf("Express = %v (found %v), Open's plan read %v", got, found, want)
			}
			if mid-before != after-mid {
				t.Errorf("Open counted %d _id accesses, Express %d", mid-before, after-mid)
			}
		})
	}
	owned := func(bsoncore.Document) bool { return true }
	txn := eng.Begin()
	defer txn.Abort()
	for _, tc := range []struct {
		name string
		sc   Scope
		want bool
	}{
		{"plain", Scope{}, true},
		{"prepare conflicts", Scope{EnforcePrepare: true}, true},
		{"owned, this collection", Scope{OwnedNS: ns, Owned: owned}, false},
		{"owned, another collection", Scope{OwnedNS: engine.Namespace{DB: "db", Coll: "d"}, Owned: owned}, true},
		{"transaction", Scope{Txn: txn}, false},
	} {
		if got := x.Within(tc.sc).Expressible(ns); got != tc.want {
			t.Errorf("%s: Expressible = %v, want %v", tc.name, got, tc.want)
		}
	}
}
