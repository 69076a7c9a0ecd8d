package engine

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// txnSet is a statement of t replacing document id's field a.
func txnSet(t *testing.T, e *Engine, tx *Txn, ns Namespace, id, a int) error {
	t.Helper()
	res, err := e.ModifyWith(ns, []bsoncore.Value{val(t, id)}, ModifyOptions{Ordered: true, Txn: tx}, func(_ int, cur bsoncore.Document) (Action, error) {
		if cur == nil {
			return Action{}, nil
		}
		return Action{Replace: doc(t, bson.D{{Key: "_id", Value: id}, {Key: "a", Value: a}}), Replacement: true}, nil
	})
	if err == nil && len(res.Errors) > 0 {
		err = res.Errors[0].Err
	}
	return err
}

func getA(t *testing.T, get func(dst []byte, ns Namespace, id bsoncore.Value) ([]byte, bool, error), ns Namespace, id int) int {
	t.Helper()
	d, found, err := get(nil, ns, val(t, id))
	if err != nil {
		t.Fatal(err)
	}
	if !found {
		return -1
	}
	return int(bsoncore.Document(d).Lookup("a").AsInt64())
}

// TestTxnSnapshotAndCommit: a transaction reads its snapshot plus its own
// writes, others see nothing until the commit, and the commit writes one
// applyOps oplog entry built from the same change fields as single writes.
func TestTxnSnapshotAndCommit(t *testing.T) {
	e := openEngine(t, "")
	ns := Namespace{"db", "c"}
	if _, err := e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 0}}), doc(t, bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: 0}})}, true); err != nil {
		t.Fatal(err)
	}
	before := len(oplogEntries(t, e))
	tx := e.Begin()
	tx.Session = &OplogSession{LSID: doc(t, bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}}), TxnNumber: 3}
	if err := txnSet(t, e, tx, ns, 1, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := e.InsertWith(ns, []bsoncore.Document{doc(t, bson.D{{Key: "_id", Value: 3}, {Key: "a", Value: 30}})}, InsertOptions{Ordered: true, Txn: tx}); err != nil {
		t.Fatal(err)
	}
	// A plain write after the snapshot: the transaction does not see it.
	if _, err := e.Replace(ns, val(t, 2), doc(t, bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: 7}})); err != nil {
		t.Fatal(err)
	}
	in := func(dst []byte, ns Namespace, id bsoncore.Value) ([]byte, bool, error) {
		return e.GetIn(tx, dst, ns, id)
	}
	for _, c := range []struct{ id, inTxn, outside int }{{1, 10, 0}, {2, 0, 7}, {3, 30, -1}} {
		if got := getA(t, in, ns, c.id); got != c.inTxn {
			t.Errorf("in the transaction, _id %d has a=%d, want %d", c.id, got, c.inTxn)
		}
		if got := getA(t, e.Get, ns, c.id); got != c.outside {
			t.Errorf("outside, before commit, _id %d has a=%d, want %d", c.id, got, c.outside)
		}
	}
	r, err := e.NewReaderIn(tx, ns)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := r.Docs(KeyRange{}, false)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for cur.Next() {
		n++
	}
	_ = cur.Close()
	_ = r.Close()
	if n != 3 {
		t.Errorf("a scan in the transaction saw %d documents, want 3", n)
	}
	if got := len(oplogEntries(t, e)); got != before+1 {
		t.Fatalf("statements logged %d entries before commit, want only the plain write's", got-before)
	}
	ts, err := tx.Commit(nil)
	if err != nil || ts == 0 {
		t.Fatalf("commit: ts %v, %v", ts, err)
	}
	if got := getA(t, e.Get, ns, 1); got != 10 {
		t.Errorf("after commit _id 1 has a=%d", got)
	}
	if got := getA(t, e.Get, ns, 3); got != 30 {
		t.Errorf("after commit _id 3 has a=%d", got)
	}
	ents := oplogEntries(t, e)
	if len(ents) != before+2 {
		t.Fatalf("%d entries after commit, want %d", len(ents), before+2)
	}
	last := ents[len(ents)-1]
	if op, _ := last.Lookup("op").StringValueOK(); op != "c" || last.Lookup("ns").StringValue() != "admin.$cmd" {
		t.Errorf("entry %v is not an applyOps command", last)
	}
	if n, _ := last.Lookup("txnNumber").AsInt64OK(); n != 3 || last.Lookup("lsid").Type == 0 || last.Lookup("prevOpTime").Type == 0 {
		t.Errorf("entry %v lacks the session fields", last)
	}
	ops, _ := last.Lookup("o", "applyOps").Array().Values()
	if len(ops) != 2 {
		t.Fatalf("applyOps holds %d changes, want 2: %v", len(ops), last)
	}
	coll := e.Catalog().Collection("db", "c")
	for i, want := range []string{"u", "i"} {
		d := ops[i].Document()
		if d.Lookup("op").StringValue() != want || d.Lookup("ns").StringValue() != "db.c" {
			t.Errorf("change %d: %v, want op %s on db.c", i, d, want)
		}
		if _, ui, _ := d.Lookup("ui").BinaryOK(); !bytes.Equal(ui, coll.UUID.Data) {
			t.Errorf("change %d names collection %x", i, ui)
		}
	}
	if t1, i1 := last.Lookup("ts").Timestamp(); uint64(t1)<<32|uint64(i1) != uint64(ts) {
		t.Errorf("entry ts %d.%d, commit returned %v", t1, i1, ts)
	}
	if err := e.CheckIndexes(ns); err != nil {
		t.Error(err)
	}
}

// TestTxnAbortAndConflicts: an aborted transaction leaves nothing; a key
// written by another open transaction conflicts at once; a key changed
// since the snapshot fails the commit; every conflict is WriteConflict.
func TestTxnAbortAndConflicts(t *testing.T) {
	e := openEngine(t, "")
	ns := Namespace{"db", "c"}
	if _, err := e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 0}})}, true); err != nil {
		t.Fatal(err)
	}
	before := len(oplogEntries(t, e))
	a := e.Begin()
	if err := txnSet(t, e, a, ns, 1, 1); err != nil {
		t.Fatal(err)
	}
	a.Abort()
	if got := getA(t, e.Get, ns, 1); got != 0 {
		t.Errorf("after abort a=%d", got)
	}
	if got := len(oplogEntries(t, e)); got != before {
		t.Errorf("abort logged %d entries", got-before)
	}

	b, c := e.Begin(), e.Begin()
	if err := txnSet(t, e, b, ns, 1, 2); err != nil {
		t.Fatal(err)
	}
	if err := txnSet(t, e, c, ns, 1, 3); mongoerr.CodeOf(err) != mongoerr.WriteConflict {
		t.Errorf("second writer of one key: %v, want WriteConflict", err)
	}
	c.Abort()
	if _, err := e.Delete(ns, val(t, 1)); err != nil {
		// A plain write does not wait for the transaction: it goes first.
		t.Fatal(err)
	}
	if _, err := b.Commit(nil); mongoerr.CodeOf(err) != mongoerr.WriteConflict {
		t.Errorf("commit over a newer change: %v, want WriteConflict", err)
	}
	if got := getA(t, e.Get, ns, 1); got != -1 {
		t.Errorf("the failed commit left a=%d", got)
	}
}

// TestTxnRefusals: writes MongoDB refuses in a transaction are refused with
// OperationNotSupportedInTransaction and change nothing; a collection
// whose indexes changed since the snapshot is a WriteConflict.
func TestTxnRefusals(t *testing.T) {
	e := openEngine(t, "")
	capped, _ := bson.Marshal(bson.D{{Key: "capped", Value: true}, {Key: "size", Value: 4096}})
	if err := e.CreateCollection(Namespace{"db", "capped"}, capped); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Insert(Namespace{"db", "c"}, []bsoncore.Document{doc(t, bson.D{{Key: "_id", Value: 1}})}, true); err != nil {
		t.Fatal(err)
	}
	tx := e.Begin()
	defer tx.Abort()
	for _, ns := range []Namespace{{"db", "capped"}, {"db", "system.js"}, {"admin", "x"}, {"config", "x"}, {"local", "x"}} {
		_, err := e.InsertWith(ns, []bsoncore.Document{doc(t, bson.D{{Key: "_id", Value: 1}})}, InsertOptions{Txn: tx})
		if mongoerr.CodeOf(err) != mongoerr.OperationNotSupportedInTransaction {
			t.Errorf("insert into %s in a transaction: %v, want OperationNotSupportedInTransaction", ns, err)
		}
	}
	spec := doc(t, bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}})
	if _, err := e.CreateIndexes(context.Background(), Namespace{"db", "c"}, []bsoncore.Document{spec}); err != nil {
		t.Fatal(err)
	}
	if err := txnSet(t, e, tx, Namespace{"db", "c"}, 1, 1); mongoerr.CodeOf(err) != mongoerr.WriteConflict {
		t.Errorf("a write after an index build since the snapshot: %v, want WriteConflict", err)
	}
	if tx.Writes() {
		t.Error("refused statements left writes in the transaction")
	}
}

// TestTxnVersionsAndMultikey: a versioned collection's versions written
// by a transaction take the commit's time (CheckHistory holds), and a
// multikey document inserted by a transaction leaves the index flagged
// and consistent after the commit.
func TestTxnVersionsAndMultikey(t *testing.T) {
	e := openEngine(t, "")
	vns := Namespace{"db", "v"}
	opts, _ := bson.Marshal(bson.D{{Key: "versioning", Value: bson.D{{Key: "enabled", Value: true}}}})
	if err := e.CreateCollection(vns, opts); err != nil {
		t.Fatal(err)
	}
	mns := Namespace{"db", "m"}
	spec := doc(t, bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}})
	if _, err := e.CreateIndexes(context.Background(), mns, []bsoncore.Document{spec}); err != nil {
		t.Fatal(err)
	}
	tx := e.Begin()
	if _, err := e.InsertWith(vns, []bsoncore.Document{doc(t, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}})}, InsertOptions{Txn: tx}); err != nil {
		t.Fatal(err)
	}
	if err := txnSet(t, e, tx, vns, 1, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := e.InsertWith(mns, []bsoncore.Document{doc(t, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: bson.A{1, 2}}})}, InsertOptions{Txn: tx}); err != nil {
		t.Fatal(err)
	}
	ts, err := tx.Commit(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.CheckHistory(vns); err != nil {
		t.Errorf("history after the commit: %v", err)
	}
	d, found, err := e.GetAt(nil, vns, val(t, 1), ts)
	if err != nil || !found || bsoncore.Document(d).Lookup("a").AsInt64() != 2 {
		t.Errorf("as of the commit time: %v %v %v, want a=2", bsoncore.Document(d), found, err)
	}
	if _, found, _ := e.GetAt(nil, vns, val(t, 1), ts-1); found {
		t.Error("the transaction's version is visible before its commit time")
	}
	ix := e.Catalog().Collection("db", "m").Indexes[0]
	if !ix.Multikey {
		t.Error("the index is not multikey after the transaction's array insert")
	}
	if err := e.CheckIndexes(mns); err != nil {
		t.Error(err)
	}
	// A statement's flag commits at once: another writer may rely on it
	// before the transaction ends, so an abort keeps it (conservative).
	spec = doc(t, bson.D{{Key: "key", Value: bson.D{{Key: "b", Value: 1}}}, {Key: "name", Value: "b_1"}})
	if _, err := e.CreateIndexes(context.Background(), mns, []bsoncore.Document{spec}); err != nil {
		t.Fatal(err)
	}
	tx = e.Begin()
	if _, err := e.InsertWith(mns, []bsoncore.Document{doc(t, bson.D{{Key: "_id", Value: 2}, {Key: "b", Value: bson.A{1, 2}}})}, InsertOptions{Txn: tx}); err != nil {
		t.Fatal(err)
	}
	tx.Abort()
	if ix := e.Catalog().Collection("db", "m").Index("b_1"); ix == nil || !ix.Multikey {
		t.Error("the aborted transaction's statement did not leave its multikey flag")
	}
}

// TestTxnBankConcurrent: transfers between accounts in transactions
// (retried on WriteConflict) race readers scanning every account in a
// read-only transaction and plain writers of the same collection's other
// documents; every scan sums to the total ("Snapshot isolation"), every
// transfer that committed is counted, and the indexes hold. Run by make
// race with the invariants tag.
func TestTxnBankConcurrent(t *testing.T) {
	e := openEngine(t, "")
	ns := Namespace{"db", "bank"}
	spec := doc(t, bson.D{{Key: "key", Value: bson.D{{Key: "b", Value: 1}}}, {Key: "name", Value: "b_1"}})
	if _, err := e.CreateIndexes(context.Background(), ns, []bsoncore.Document{spec}); err != nil {
		t.Fatal(err)
	}
	const accounts, initial = 8, 100
	var docs []bsoncore.Document
	for i := range accounts {
		docs = append(docs, doc(t, bson.D{{Key: "_id", Value: i}, {Key: "b", Value: initial}}))
	}
	if _, err := e.Insert(ns, docs, true); err != nil {
		t.Fatal(err)
	}
	move := func(tx *Txn, id, delta int) error {
		res, err := e.ModifyWith(ns, []bsoncore.Value{val(t, id)}, ModifyOptions{Ordered: true, Txn: tx}, func(_ int, cur bsoncore.Document) (Action, error) {
			b := int(cur.Lookup("b").AsInt64())
			return Action{Replace: doc(t, bson.D{{Key: "_id", Value: id}, {Key: "b", Value: b + delta}})}, nil
		})
		if err == nil && len(res.Errors) > 0 {
			err = res.Errors[0].Err
		}
		return err
	}
	var wg sync.WaitGroup
	var committed, conflicts atomic.Int64
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				from, to := (w+i)%accounts, (w*3+i*5+1)%accounts
				if from == to {
					continue
				}
				tx := e.Begin()
				err := move(tx, from, -7)
				if err == nil {
					err = move(tx, to, 7)
				}
				if err == nil {
					_, err = tx.Commit(nil)
				} else {
					tx.Abort()
				}
				switch mongoerr.CodeOf(err) {
				case 0:
					committed.Add(1)
				case mongoerr.WriteConflict:
					conflicts.Add(1)
				default:
					t.Error(err)
					return
				}
			}
		}()
	}
	stop := make(chan struct{})
	var scans atomic.Int64
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				tx := e.Begin()
				r, err := e.NewReaderIn(tx, ns)
				if err != nil {
					t.Error(err)
					return
				}
				c, err := r.Docs(KeyRange{}, false)
				if err != nil {
					t.Error(err)
					return
				}
				sum := 0
				for c.Next() {
					d, _ := c.Value()
					if id := d.Lookup("_id").AsInt64(); id < accounts {
						sum += int(d.Lookup("b").AsInt64())
					}
				}
				_ = c.Close()
				_ = r.Close()
				tx.Abort()
				if sum != accounts*initial {
					t.Errorf("a snapshot scan summed to %d, not %d", sum, accounts*initial)
				}
				scans.Add(1)
			}
		}()
	}
	wg.Add(1)
	go func() { // plain writers of other documents of the collection
		defer wg.Done()
		for i := range 100 {
			if _, err := e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{Key: "_id", Value: 1000 + i}, {Key: "b", Value: bson.A{i, i + 1}}})}, true); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	time.Sleep(10 * time.Millisecond)
	for committed.Load()+conflicts.Load() < 150 && !t.Failed() {
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	total := 0
	for i := range accounts {
		total += getB(t, e, ns, i)
	}
	if total != accounts*initial {
		t.Errorf("after the transfers the accounts sum to %d", total)
	}
	if committed.Load() == 0 || scans.Load() == 0 {
		t.Errorf("%d transfers committed, %d scans: the test exercised nothing", committed.Load(), scans.Load())
	}
	if err := e.CheckIndexes(ns); err != nil {
		t.Error(err)
	}
	t.Logf("%d transfers committed, %d write conflicts, %d snapshot scans", committed.Load(), conflicts.Load(), scans.Load())
}

func getB(t *testing.T, e *Engine, ns Namespace, id int) int {
	t.Helper()
	d, found, err := e.Get(nil, ns, val(t, id))
	if err != nil || !found {
		t.Fatalf("account %d: %v %v", id, found, err)
	}
	return int(bsoncore.Document(d).Lookup("b").AsInt64())
}
