package bsonx_test

import (
	"encoding/binary"
	"flag"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/bsonx/bsonxtest"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

var (
	seedFlag  = flag.Uint64("seed", 0, "seed for the random property tests (0: time-based)")
	pairsFlag = flag.Int("pairs", 20000, "random pairs per property test")
)

// newRand seeds a generator and makes sure a failure names the seed.
func newRand(t *testing.T) *rand.Rand {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("reproduce with: go test -run '%s' -seed %d", t.Name(), seed)
		}
	})
	return rand.New(rand.NewPCG(seed, seed))
}

// TestCompareIsTotalOrder checks reflexivity and antisymmetry on random
// pairs (near-equal by construction), and transitivity by sorting random
// values and checking every pair of the result.
func TestCompareIsTotalOrder(t *testing.T) {
	g := bsonxtest.New(newRand(t))
	g.Malformed = 0.05
	for range *pairsFlag {
		a, b := g.Pair()
		ab, ba := bsonx.Compare(a, b), bsonx.Compare(b, a)
		if ab != -ba || ab < -1 || ab > 1 {
			t.Fatalf("not antisymmetric: Compare(a, b) = %d, Compare(b, a) = %d\na = %s\nb = %s", ab, ba, show(a), show(b))
		}
		if bsonx.Compare(a, a) != 0 {
			t.Fatalf("not reflexive: %s", show(a))
		}
	}
	vals := make([]bsoncore.Value, 0, 400)
	for range cap(vals) / 2 {
		a, b := g.Pair()
		vals = append(vals, a, b)
	}
	slices.SortFunc(vals, bsonx.Compare)
	for i := range vals {
		for j := i + 1; j < len(vals); j++ {
			if bsonx.Compare(vals[i], vals[j]) > 0 {
				t.Fatalf("not transitive: after sorting, value %d > value %d\n%s\n%s", i, j, show(vals[i]), show(vals[j]))
			}
		}
	}
}

// TestNumbersAgainstRationals checks number comparison against a plain
// oracle: exact rationals from math/big.
func TestNumbersAgainstRationals(t *testing.T) {
	g := bsonxtest.New(newRand(t))
	for range *pairsFlag {
		a, b := g.NumberPair()
		want := oracleCompare(t, a, b)
		if got := bsonx.Compare(a, b); got != want {
			t.Fatalf("Compare(%s, %s) = %d, oracle says %d", show(a), show(b), got, want)
		}
	}
}

// oracleNumber is a number as a class (-3 NaN, -2 -Inf, 0 finite, 2 +Inf)
// and, when finite, its exact value.
func oracleNumber(t *testing.T, v bsoncore.Value) (class int, r *big.Rat) {
	switch v.Type {
	case bsoncore.TypeInt32:
		return 0, new(big.Rat).SetInt64(int64(int32(binary.LittleEndian.Uint32(v.Data))))
	case bsoncore.TypeInt64:
		return 0, new(big.Rat).SetInt64(int64(binary.LittleEndian.Uint64(v.Data)))
	case bsoncore.TypeDouble:
		f := math.Float64frombits(binary.LittleEndian.Uint64(v.Data))
		switch {
		case math.IsNaN(f):
			return -3, nil
		case math.IsInf(f, 1):
			return 2, nil
		case math.IsInf(f, -1):
			return -2, nil
		}
		return 0, new(big.Rat).SetFloat64(f)
	}
	d := bson.NewDecimal128(binary.LittleEndian.Uint64(v.Data[8:]), binary.LittleEndian.Uint64(v.Data))
	switch {
	case d.IsNaN():
		return -3, nil
	case d.IsInf() > 0:
		return 2, nil
	case d.IsInf() < 0:
		return -2, nil
	}
	coef, exp, err := d.BigInt()
	if err != nil {
		t.Fatalf("oracle: %s: %v", show(v), err) // NaN and Inf were handled above
	}
	maxCoef := new(big.Int).Sub(new(big.Int).Exp(big.NewInt(10), big.NewInt(34), nil), big.NewInt(1))
	if new(big.Int).Abs(coef).Cmp(maxCoef) > 0 {
		return 0, new(big.Rat) // non-canonical: zero
	}
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(exp, -exp))), nil)
	r = new(big.Rat).SetInt(coef)
	if exp >= 0 {
		return 0, r.Mul(r, new(big.Rat).SetInt(p))
	}
	return 0, r.Quo(r, new(big.Rat).SetInt(p))
}

func oracleCompare(t *testing.T, a, b bsoncore.Value) int {
	ca, ra := oracleNumber(t, a)
	cb, rb := oracleNumber(t, b)
	if ca != cb || ca != 0 {
		return cmpInt(ca, cb)
	}
	return ra.Cmp(rb)
}

// TestInterestingValues checks antisymmetry on every pair of the hand-picked
// edge values and transitivity of their sorted order.
func TestInterestingValues(t *testing.T) {
	vals := bsonxtest.Interesting()
	if err := bsonxtest.LiteralError(); err != nil {
		t.Fatal(err)
	}
	for _, a := range vals {
		for _, b := range vals {
			if ab, ba := bsonx.Compare(a, b), bsonx.Compare(b, a); ab != -ba {
				t.Fatalf("not antisymmetric: %d, %d\na = %s\nb = %s", ab, ba, show(a), show(b))
			}
		}
	}
	slices.SortFunc(vals, bsonx.Compare)
	for i := range vals {
		for j := i + 1; j < len(vals); j++ {
			if bsonx.Compare(vals[i], vals[j]) > 0 {
				t.Fatalf("not transitive: sorted value %d > value %d\n%s\n%s", i, j, show(vals[i]), show(vals[j]))
			}
		}
	}
}
