package engine

import (
	"context"
	"testing"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/opctx"
)

// TestOpsKill: killOp cancels an operation in progress with Interrupted and
// currentOp then shows it killPending; an unknown, ended or uncancellable
// operation is not killed.
func TestOpsKill(t *testing.T) {
	var ops Ops
	ctx, cancel := context.WithCancelCause(context.Background())
	op := ops.Begin(OpInfo{Op: "query", NS: "db.c", Cancel: cancel})
	internal := ops.Begin(OpInfo{Op: "command", NS: "db.c"}) // internal work without a Cancel
	if ops.Kill(op.ID + 100) {
		t.Fatal("Kill of an unknown opid reported a kill")
	}
	if ops.Kill(internal.ID) {
		t.Fatal("Kill of an operation without Cancel reported a kill")
	}
	if !ops.Kill(op.ID) {
		t.Fatal("Kill of a running operation reported nothing")
	}
	if got := mongoerr.CodeOf(opctx.Err(ctx)); got != mongoerr.Interrupted {
		t.Fatalf("the killed operation's context: code %d, want Interrupted", got)
	}
	pending := map[int64]bool{}
	for _, st := range ops.List() {
		pending[st.ID] = st.KillPending
	}
	if !pending[op.ID] || pending[internal.ID] {
		t.Fatalf("killPending = %v, want only opid %d", pending, op.ID)
	}
	ops.End(op)
	if ops.Kill(op.ID) {
		t.Fatal("Kill of an ended operation reported a kill")
	}
}
