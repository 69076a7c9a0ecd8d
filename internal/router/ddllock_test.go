package router

import (
	"context"
	"testing"
	"time"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// TestDDLLock: a collection's DDL lock is held by one router at a time,
// is free again once released, and is taken over once its holder left it
// longer than ddlLockExpiry.
func TestDDLLock(t *testing.T) {
	ctx := context.Background()
	cfg := startConfigServer(t)
	a, err := New(Options{ConfigDB: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := New(Options{ConfigDB: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	defer func(w, e time.Duration) { ddlLockWait, ddlLockExpiry = w, e }(ddlLockWait, ddlLockExpiry)
	ddlLockWait = 200 * time.Millisecond

	release, err := a.lockNS(ctx, "db.c")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.lockNS(ctx, "db.c"); mongoerr.CodeOf(err) != mongoerr.LockBusy {
		t.Fatalf("a second router took a held lock: %v", err)
	}
	other, err := b.lockNS(ctx, "db.other")
	if err != nil {
		t.Fatalf("another collection's lock: %v", err)
	}
	other()
	release()
	releaseB, err := b.lockNS(ctx, "db.c")
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	// b dies holding it: after the expiry a takes it over, and b's late
	// release does not free a's lock.
	ddlLockExpiry = 100 * time.Millisecond
	time.Sleep(150 * time.Millisecond)
	releaseA, err := a.lockNS(ctx, "db.c")
	if err != nil {
		t.Fatalf("an abandoned lock was not taken over: %v", err)
	}
	releaseB()
	ddlLockExpiry = time.Hour
	if _, err := b.lockNS(ctx, "db.c"); mongoerr.CodeOf(err) != mongoerr.LockBusy {
		t.Fatalf("a stale holder's release freed the new holder's lock: %v", err)
	}
	releaseA()
}
