package opctx_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/opctx"
)

func TestErrIsTheCause(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cause error
		want  mongoerr.Code
	}{
		{"killOp", opctx.ErrKilled, mongoerr.Interrupted},
		{"client gone", opctx.ErrClientGone, mongoerr.ClientDisconnect},
		{"maxTimeMS", opctx.ErrMaxTime, mongoerr.MaxTimeMSExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			if err := opctx.Err(ctx); err != nil {
				t.Fatalf("live context: %v", err)
			}
			cancel(tc.cause)
			if got := mongoerr.CodeOf(opctx.Err(ctx)); got != tc.want {
				t.Fatalf("code %d, want %d", got, tc.want)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := opctx.Err(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("a caller's cancel: %v, want context.Canceled", err)
	}
}

func TestWithMaxTime(t *testing.T) {
	ctx, stop := opctx.WithMaxTime(context.Background(), 0)
	defer stop()
	if _, ok := ctx.Deadline(); ok {
		t.Fatal("maxTimeMS 0 set a deadline")
	}
	ctx, stop = opctx.WithMaxTime(context.Background(), time.Millisecond)
	defer stop()
	<-ctx.Done()
	if got := mongoerr.CodeOf(opctx.Err(ctx)); got != mongoerr.MaxTimeMSExpired {
		t.Fatalf("code %d, want MaxTimeMSExpired", got)
	}
	if left, ok := opctx.Remaining(ctx); !ok || left <= 0 {
		t.Fatalf("Remaining after the deadline = %v, %v; want a positive sliver", left, ok)
	}
}

func TestPollChecksEverySixteenth(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(opctx.ErrKilled)
	var p opctx.Poll
	calls := 0
	for p.Err(ctx) == nil {
		calls++
		if calls > 100 {
			t.Fatal("Poll never saw the cancellation")
		}
	}
	if calls != 15 {
		t.Fatalf("Poll saw the cancellation after %d quiet calls, want 15", calls)
	}
}

// TestBound: a request attached to a Bound ends the bound work with its
// cause; a detached request's end does not.
func TestBound(t *testing.T) {
	b := opctx.NewBound()
	defer b.Close()
	req1, end1 := context.WithCancelCause(context.Background())
	detach := b.Attach(req1)
	detach()
	end1(context.Canceled) // the first request finished normally
	time.Sleep(10 * time.Millisecond)
	if err := opctx.Err(b.Context()); err != nil {
		t.Fatalf("a detached request ended the bound work: %v", err)
	}
	req2, kill := context.WithCancelCause(context.Background())
	defer b.Attach(req2)()
	kill(opctx.ErrKilled)
	select {
	case <-b.Context().Done():
	case <-time.After(time.Second):
		t.Fatal("killing the attached request did not end the bound work")
	}
	if got := mongoerr.CodeOf(opctx.Err(b.Context())); got != mongoerr.Interrupted {
		t.Fatalf("code %d, want Interrupted", got)
	}
}
