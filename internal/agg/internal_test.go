package agg

import (
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
)

// TestPushLimit checks that $push and $addToSet fail with 146 once their
// values pass the accumulator's limit (100 MB in production, lowered here),
// and that repeated $addToSet values cost nothing.
func TestPushLimit(t *testing.T) {
	for _, op := range []string{"$push", "$addToSet"} {
		a := accumulators[op].make(nil).(*pushAcc)
		a.limit = 200
		var err error
		added := 0
		for i := 0; i < 100 && err == nil; i++ {
			if _, err = a.add(expr.String("0123456789")); err == nil {
				added++
			}
		}
		switch {
		case op == "$push" && (mongoerr.CodeOf(err) != 146 || added == 0):
			t.Errorf("$push: %d values added, err = %v; want some, then code 146", added, err)
		case op == "$addToSet" && (err != nil || added != 100):
			t.Errorf("$addToSet of one repeated value: %d added, err = %v", added, err)
		}
	}
	a := accumulators["$addToSet"].make(nil).(*pushAcc)
	a.limit = 200
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		_, err = a.add(expr.Int32(int32(i)))
	}
	if mongoerr.CodeOf(err) != 146 {
		t.Errorf("$addToSet of distinct values: err = %v, want code 146", err)
	}
}

// TestNAccLimit checks the same cap on the n-accumulators when n is large,
// and that a full $lastN, replacing values of one size, stays under it.
func TestNAccLimit(t *testing.T) {
	budget := accBudget{op: "$nAcc", limit: 200}
	for name, a := range map[string]accumulator{
		"$firstN": &firstLastNAcc{accBudget: budget, n: 1000},
		"$lastN":  &firstLastNAcc{accBudget: budget, n: 1000, last: true},
		"$maxN":   &minMaxNAcc{accBudget: budget, n: 1000, sign: -1},
	} {
		var err error
		for i := 0; i < 100 && err == nil; i++ {
			_, err = a.add(expr.String("0123456789"))
		}
		if mongoerr.CodeOf(err) != 146 {
			t.Errorf("%s: err = %v, want code 146", name, err)
		}
	}
	a := &firstLastNAcc{accBudget: budget, n: 2, last: true}
	for i := 0; i < 100; i++ {
		if _, err := a.add(expr.String("0123456789")); err != nil {
			t.Fatalf("$lastN with n 2, value %d: %v", i, err)
		}
	}
}

// TestExpMovingAvgLargestN checks alpha = 2/(N+1) for N = MaxInt64, where
// N+1 in int64 wrapped to a negative alpha (invisible in double results).
func TestExpMovingAvgLargestN(t *testing.T) {
	spec := bsoncore.NewDocumentBuilder().
		AppendString("input", "$x").AppendInt64("N", math.MaxInt64).Build()
	s := &setWindowFieldsStage{sort: &query.Sort{}}
	fn, err := parseExpMovingAvgFn("$expMovingAvg", docValue(spec), bsoncore.Value{}, s, &parseContext{scope: expr.NewScope(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if a := fn.(*expMovingAvgFn).alpha; a.Sign() <= 0 {
		t.Errorf("alpha = %v, want > 0", a)
	}
}
