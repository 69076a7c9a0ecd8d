package keystring_test

import (
	"bytes"
	"encoding/hex"
	"flag"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/bsonx/bsonxtest"
	"github.com/cairndb/cairn/internal/keystring"
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

var show = bsonxtest.Show

func sign(c int) int {
	switch {
	case c < 0:
		return -1
	case c > 0:
		return 1
	}
	return 0
}

// checkPair checks every invariant of doc.go on the values a and b, and on
// the compound keys (a, c) and (b, d): c and d supply a second key part in
// the descending direction.
func checkPair(t *testing.T, a, b, c, d bsoncore.Value) {
	t.Helper()
	want := bsonx.Compare(a, b)
	ka, kb := keystring.Append(nil, a), keystring.Append(nil, b)
	da, db := keystring.AppendDesc(nil, a), keystring.AppendDesc(nil, b)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf(format+"\na = %s\n    %x\nb = %s\n    %x", append(args, show(a), ka, show(b), kb)...)
	}

	// Order, both directions.
	if got := sign(bytes.Compare(ka, kb)); got != want {
		fail("Order: bytes.Compare(Append(a), Append(b)) = %d, bsonx.Compare = %d", got, want)
	}
	if got := sign(bytes.Compare(da, db)); got != -want {
		fail("Order: bytes.Compare(AppendDesc(a), AppendDesc(b)) = %d, want %d", got, -want)
	}

	// Self-delimiting: a compound key (a asc, c desc) sorts as the tuple.
	ac := keystring.AppendDesc(keystring.Append(nil, a), c)
	bd := keystring.AppendDesc(keystring.Append(nil, b), d)
	wantTuple := want
	if want == 0 {
		wantTuple = -bsonx.Compare(c, d)
	}
	if got := sign(bytes.Compare(ac, bd)); got != wantTuple {
		fail("Self-delimiting: compound keys compare %d, tuples %d\nc = %s\nd = %s", got, wantTuple, show(c), show(d))
	}

	// Len splits compound keys, and appending to a non-empty dst works.
	for _, k := range [][]byte{ka, da} {
		for _, suffix := range [][]byte{nil, kb, db, {0x00}, {0xff}} {
			n, err := keystring.Len(append(append([]byte(nil), k...), suffix...))
			if err != nil || n != len(k) {
				fail("Len(%x ‖ %x) = %d, %v; want %d", k, suffix, n, err, len(k))
			}
		}
	}
	if got := keystring.Append([]byte("prefix"), a); !bytes.Equal(got[6:], ka) {
		fail("Append to a non-empty dst differs")
	}

	// Round trip: Decode gives back an equal value that re-encodes alike.
	for _, k := range [][]byte{ka, da} {
		v, n, err := keystring.Decode(append(append([]byte(nil), k...), kb...))
		if err != nil || n != len(k) {
			fail("Decode(%x) = %d bytes, %v; want %d", k, n, err, len(k))
		}
		if bsonx.Compare(v, a) != 0 {
			fail("Round trip: decoded %s", show(v))
		}
		if again := keystring.Append(nil, v); !bytes.Equal(again, ka) {
			fail("Round trip: decoded %s re-encodes as %x", show(v), again)
		}
		if _, _, ok := bsoncore.ReadValue(v.Data, v.Type); !ok || len(v.Data) != mustLen(v) {
			fail("Decode produced malformed BSON: %s % x", show(v), v.Data)
		}
	}

	// Direction: the first byte tells.
	if ka[0] == 0 || ka[0] >= 0x80 || da[0] < 0x80 || da[0] == 0xff {
		fail("Direction: first bytes %#x, %#x", ka[0], da[0])
	}
}

// mustLen is the length bsoncore reads for v, or -1.
func mustLen(v bsoncore.Value) int {
	_, rest, ok := bsoncore.ReadValue(v.Data, v.Type)
	if !ok {
		return -1
	}
	return len(v.Data) - len(rest)
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
