package session_test

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/replset/rstest"
	"github.com/cairndb/cairn/internal/session"
)

// TestRetriedCommitLearnsOutcome: a commit whose primary is cut off
// before Raft decides fails without a verdict; retried on the same member
// it answers NotWritablePrimary (the driver then retries on the new
// primary), not NoSuchTransaction, and once that member leads again the
// retry learns the real outcome ("Retried commit learns the outcome").
// The new primary, which never had the commit in its log, answers
// NoSuchTransaction.
func TestRetriedCommitLearnsOutcome(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a replica set")
	}
	s := rstest.Start(t, 3, 1, rstest.Options{})
	p := s.WaitForPrimary(10 * time.Second)
	var others []int
	for i := range 3 {
		if i != p {
			others = append(others, i)
		}
	}
	eng := s.Engine(p)
	tbl := session.NewTable(eng, nil)
	ns := engine.Namespace{DB: "db", Coll: "c"}
	if err := eng.CreateCollection(ns, nil); err != nil {
		t.Fatal(err)
	}
	id := session.ID{UUID: [16]byte{7}}
	step := func(tbl *session.Table, fn func(u *session.Use) error) error {
		t.Helper()
		u, err := tbl.Checkout(context.Background(), id, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer u.Release()
		return fn(u)
	}
	commit := func(u *session.Use) error { _, err := u.CommitTransaction(1); return err }
	if err := step(tbl, func(u *session.Use) error {
		tx, err := u.Transaction(1, true)
		if err != nil {
			return err
		}
		_, err = eng.InsertWith(ns, []bsoncore.Document{bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()}, engine.InsertOptions{Txn: tx})
		return err
	}); err != nil {
		t.Fatal(err)
	}

	s.Partition([]int{p}, others)
	err := step(tbl, commit)
	t.Logf("the cut-off primary's commit: %v", err)
	if err == nil || mongoerr.CodeOf(err) == mongoerr.WriteConflict {
		t.Fatalf("a commit without a quorum answered %v, want an error without a verdict", err)
	}
	if err := step(tbl, commit); mongoerr.CodeOf(err) != mongoerr.NotWritablePrimary {
		t.Fatalf("the commit retried on the old primary: %v, want NotWritablePrimary (the outcome is not known there)", err)
	}

	// The others elect a primary of their own; the commit was never in
	// its log, so its outcome there is NoSuchTransaction.
	q := -1
	for deadline := time.Now().Add(20 * time.Second); q < 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, i := range others {
			if s.Member(i).CanWrite() == nil {
				q = i
			}
		}
	}
	if q < 0 {
		t.Fatal("the majority side elected no primary")
	}
	if err := step(session.NewTable(s.Engine(q), nil), commit); mongoerr.CodeOf(err) != mongoerr.NoSuchTransaction {
		t.Fatalf("the commit retried on the new primary: %v, want NoSuchTransaction", err)
	}

	// The old primary leads again (the third member cut off while q hands
	// over): its retry now learns the outcome through the barrier.
	r := others[0] + others[1] - q
	s.Heal()
	s.Partition([]int{r}, []int{p, q})
	for deadline := time.Now().Add(20 * time.Second); s.Member(p).CanWrite() != nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the old primary did not lead again")
		}
		if s.Member(q).CanWrite() == nil {
			_ = s.Member(q).StepDown(context.Background(), 5, 2)
		}
	}
	if err := step(tbl, commit); mongoerr.CodeOf(err) != mongoerr.NoSuchTransaction {
		t.Fatalf("the commit retried on the old primary leading again: %v, want NoSuchTransaction", err)
	}
	if _, found, err := eng.Get(nil, ns, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 1)}); err != nil || found {
		t.Fatalf("the lost commit's document: found %v, %v", found, err)
	}
	s.Heal()
}
