package expr_test

import (
	"context"
	"testing"
	"time"

	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/opctx"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func evalIn(t *testing.T, ctx *expr.Context, src string) bsoncore.Value {
	t.Helper()
	e, err := expr.Parse(parseJSON(t, `{"e": `+src+`}`).Lookup("e"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := e.Eval(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// $$NOW is one value per context: what SetNow fixed, or else the clock
// read once, however many documents the context evaluates.
func TestNowIsFixedPerContext(t *testing.T) {
	doc := parseJSON(t, `{"a": 1}`)
	ctx := expr.NewContext(doc)
	first := evalIn(t, ctx, `"$$NOW"`)
	time.Sleep(2 * time.Millisecond)
	ctx.Reset(doc)
	if again := evalIn(t, ctx, `{"$add": ["$$NOW", 0]}`); !expr.Equal(first, again) {
		t.Errorf("$$NOW changed within a context: %s then %s", first, again)
	}
	when := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	ctx.SetNow(when)
	if got := evalIn(t, ctx, `"$$NOW"`); !expr.Equal(got, expr.Date(when.UnixMilli())) {
		t.Errorf("after SetNow, $$NOW = %s", got)
	}
	ctx.SetVar("NOW", expr.Date(0))
	if got := evalIn(t, ctx, `"$$NOW"`); !expr.Equal(got, expr.Date(0)) {
		t.Errorf("after SetVar(NOW), $$NOW = %s", got)
	}
}

func TestClusterTime(t *testing.T) {
	ctx := expr.NewContext(parseJSON(t, `{}`))
	ctx.SetClusterTime(100, 2)
	got := evalIn(t, ctx, `"$$CLUSTER_TIME"`)
	if ts, i, ok := got.TimestampOK(); !ok || ts != 100 || i != 2 {
		t.Errorf("$$CLUSTER_TIME = %s", got)
	}
}

// TestLoopsStopWithTheOperation: $map, $filter and $reduce over a long
// array end with the operation's cause once its context ends.
func TestLoopsStopWithTheOperation(t *testing.T) {
	for _, src := range []string{
		`{"$map": {"input": {"$range": [0, 100000]}, "in": {"$add": ["$$this", 1]}}}`,
		`{"$filter": {"input": {"$range": [0, 100000]}, "cond": true}}`,
		`{"$reduce": {"input": {"$range": [0, 100000]}, "initialValue": 0, "in": {"$add": ["$$value", "$$this"]}}}`,
	} {
		e, err := expr.Parse(parseJSON(t, `{"e": `+src+`}`).Lookup("e"))
		if err != nil {
			t.Fatal(err)
		}
		ctx := expr.NewContext(bsoncore.Document{5, 0, 0, 0, 0})
		op, cancel := context.WithCancelCause(context.Background())
		ctx.SetOperation(op)
		if _, err := e.Eval(ctx); err != nil {
			t.Fatalf("%s with a live operation: %v", src, err)
		}
		cancel(opctx.ErrKilled)
		if _, err := e.Eval(ctx); mongoerr.CodeOf(err) != mongoerr.Interrupted {
			t.Fatalf("%s after killOp: %v, want Interrupted", src, err)
		}
	}
}
