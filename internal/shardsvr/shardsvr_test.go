package shardsvr

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/shard"
)

func kdoc(v any) bsoncore.Document {
	b, err := bson.Marshal(bson.D{{Key: "k", Value: v}})
	if err != nil {
		panic(err)
	}
	return b
}

func TestKeyRange(t *testing.T) {
	p, err := shard.ParsePattern(bsoncore.NewDocumentBuilder().AppendInt32("k", 1).Build())
	if err != nil {
		t.Fatal(err)
	}
	r, err := newRange(p, kdoc(10), kdoc(20))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		doc  bsoncore.Document
		want bool
	}{
		{kdoc(9), false}, {kdoc(10), true}, {kdoc(19.5), true}, {kdoc(int64(19)), true}, {kdoc(20), false},
		{kdoc("a"), false}, // strings sort after numbers
		{bsoncore.NewDocumentBuilder().AppendInt32("x", 1).Build(), false}, // a missing key is null, before numbers
	} {
		if got := r.holds(tc.doc); got != tc.want {
			t.Errorf("[10, 20) holds %s: %v, want %v", tc.doc, got, tc.want)
		}
	}
	for _, tc := range []struct {
		lo, hi any
		want   bool
	}{{0, 10, false}, {0, 11, true}, {15, 16, true}, {19, 30, true}, {20, 30, false}} {
		o, _ := newRange(p, kdoc(tc.lo), kdoc(tc.hi))
		if got := r.overlaps(o) && o.overlaps(r); got != tc.want {
			t.Errorf("[10, 20) overlaps [%v, %v): %v, want %v", tc.lo, tc.hi, got, tc.want)
		}
	}
	m := shard.NewMap("db.c", p, bson.NewObjectID(), "s0")
	for _, at := range []int{10, 20} {
		if err := m.Split(kdoc(at)); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Move(1, "s1"); err != nil {
		t.Fatal(err)
	}
	if i, _, _ := exactChunk(m, kdoc(10), kdoc(20)); i != 1 {
		t.Errorf("exactChunk [10, 20): %d, want 1", i)
	}
	if i, _, _ := exactChunk(m, kdoc(10), kdoc(15)); i != -1 {
		t.Errorf("exactChunk [10, 15): %d, want -1", i)
	}
	if !ownsAny(m, "s1", r) || ownsAny(m, "s0", r) || ownsAny(nil, "s1", r) {
		t.Error("ownsAny: s1 owns [10, 20), s0 does not, and a nil map gives nothing")
	}
}

func TestWriteError(t *testing.T) {
	werr := bsoncore.NewDocumentBuilder().AppendDouble("ok", 1).AppendArray("writeErrors", bsoncore.NewArrayBuilder().AppendDocument(
		bsoncore.NewDocumentBuilder().AppendInt32("index", 0).AppendInt32("code", int32(mongoerr.DuplicateKey)).AppendString("errmsg", "dup").Build()).Build()).Build()
	if err := writeError(werr); mongoerr.CodeOf(err) != mongoerr.DuplicateKey {
		t.Errorf("a write error: %v, want DuplicateKey", err)
	}
	wce := bsoncore.NewDocumentBuilder().AppendDouble("ok", 1).AppendDocument("writeConcernError",
		bsoncore.NewDocumentBuilder().AppendInt32("code", int32(mongoerr.WriteConcernFailed)).AppendString("errmsg", "late").Build()).Build()
	if err := writeError(wce); mongoerr.CodeOf(err) != mongoerr.WriteConcernFailed {
		t.Errorf("a write concern error: %v, want WriteConcernFailed", err)
	}
	if err := writeError(bsoncore.NewDocumentBuilder().AppendDouble("ok", 1).Build()); err != nil {
		t.Errorf("no write error: %v", err)
	}
}

// TestCriticalSectionGate: a write admitted before the critical section
// delays its start until the write is done; writes arriving during it
// wait for its end.
func TestCriticalSectionGate(t *testing.T) {
	n := &Node{opts: Options{ShardSvr: true}, colls: map[string]*collMeta{}}
	ctx := context.Background()
	release, _, err := n.Admit(ctx, "db.c", true, bsoncore.Value{}, bsoncore.Value{})
	if err != nil {
		t.Fatal(err)
	}
	cm := n.meta("db.c")
	entered := make(chan func())
	go func() {
		exit, err := cm.enterCritical(time.Minute)
		if err != nil {
			t.Error(err)
		}
		entered <- exit
	}()
	select {
	case <-entered:
		t.Fatal("the critical section began while a write was in flight")
	case <-time.After(50 * time.Millisecond):
	}
	release()
	exit := <-entered
	if exit == nil {
		t.FailNow()
	}
	admitted := make(chan error)
	go func() {
		rel, _, err := n.Admit(ctx, "db.c", true, bsoncore.Value{}, bsoncore.Value{})
		if rel != nil {
			rel()
		}
		admitted <- err
	}()
	select {
	case <-admitted:
		t.Fatal("a write ran during the critical section")
	case <-time.After(50 * time.Millisecond):
	}
	// Reads and other collections' writes are not held.
	if rel, _, err := n.Admit(ctx, "db.other", true, bsoncore.Value{}, bsoncore.Value{}); err != nil {
		t.Fatal(err)
	} else {
		rel()
	}
	if rel, _, err := n.Admit(ctx, "db.c", false, bsoncore.Value{}, bsoncore.Value{}); err != nil || rel != nil {
		t.Fatalf("a read: %v", err)
	}
	exit()
	if err := <-admitted; err != nil {
		t.Fatal(err)
	}
	// A write waiting for a critical section gives up with its context.
	exit, err = cm.enterCritical(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, _, err := n.Admit(cctx, "db.c", true, bsoncore.Value{}, bsoncore.Value{}); err == nil {
		t.Error("a write waited past its deadline")
	}
	if _, err := cm.enterCritical(time.Minute); mongoerr.CodeOf(err) != mongoerr.ConflictingOperationInProgress {
		t.Errorf("a second critical section: %v, want ConflictingOperationInProgress", err)
	}
	exit()
	exit() // ending it twice is harmless
}

// TestCriticalSectionLockTimeout: a hold that outlives
// migrationLockAcquisitionMaxWaitMS (an open transaction's) makes the
// critical section give up with LockTimeout; the writes that waited for it
// meanwhile go on, and a critical section asked after the hold ends
// begins.
func TestCriticalSectionLockTimeout(t *testing.T) {
	n := &Node{opts: Options{ShardSvr: true}, colls: map[string]*collMeta{}}
	ctx := context.Background()
	hold, _, err := n.Admit(ctx, "db.c", true, bsoncore.Value{}, bsoncore.Value{})
	if err != nil {
		t.Fatal(err)
	}
	cm := n.meta("db.c")
	gaveUp := make(chan error, 1)
	go func() {
		_, err := cm.enterCritical(150 * time.Millisecond)
		gaveUp <- err
	}()
	for !cm.inCritical() {
		time.Sleep(time.Millisecond)
	}
	waited := make(chan error, 1)
	go func() {
		rel, _, err := n.Admit(ctx, "db.c", true, bsoncore.Value{}, bsoncore.Value{})
		if rel != nil {
			rel()
		}
		waited <- err
	}()
	select {
	case <-waited:
		t.Fatal("a new write went on while a critical section waited to begin")
	case <-time.After(50 * time.Millisecond):
	}
	if err := <-gaveUp; mongoerr.CodeOf(err) != mongoerr.LockTimeout {
		t.Fatalf("a critical section behind a hold: %v, want LockTimeout", err)
	}
	if err := <-waited; err != nil {
		t.Fatalf("the write that waited: %v", err)
	}
	hold()
	exit, err := cm.enterCritical(150 * time.Millisecond)
	if err != nil {
		t.Fatalf("a critical section with no holders: %v", err)
	}
	exit()
}
