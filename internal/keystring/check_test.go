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
	ka, kb := checkValue(t, a), checkValue(t, b)
	checkOrder(t, a, b, ka, kb)
	checkTuple(t, a, b, c, d)
}

// checkValue checks the invariants that concern one value: Len, Round trip,
// Direction. It returns the ascending and descending encodings.
func checkValue(t *testing.T, v bsoncore.Value) (k keys) {
	t.Helper()
	k.asc, k.desc = keystring.Append(nil, v), keystring.AppendDesc(nil, v)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf(format+"\nvalue = %s\n        %x", append(args, show(v), k.asc)...)
	}
	if k.asc[0] == 0 || k.asc[0] >= 0x80 || k.desc[0] < 0x80 || k.desc[0] == 0xff {
		fail("Direction: first bytes %#x, %#x", k.asc[0], k.desc[0])
	}
	if !bytes.Equal(invert(k.asc), k.desc) {
		fail("AppendDesc is not the complement of Append: %x", k.desc)
	}
	if got := keystring.Append([]byte("prefix"), v); !bytes.Equal(got[6:], k.asc) {
		fail("Append to a non-empty dst differs")
	}
	for _, enc := range [][]byte{k.asc, k.desc} {
		// Len and Decode find the end of the value, whatever follows it.
		for _, suffix := range [][]byte{nil, k.asc, {0xff}} {
			in := append(append([]byte(nil), enc...), suffix...)
			if n, err := keystring.Len(in); err != nil || n != len(enc) {
				fail("Len(%x ‖ %x) = %d, %v; want %d", enc, suffix, n, err, len(enc))
			}
			got, n, err := keystring.Decode(in)
			if err != nil || n != len(enc) {
				fail("Decode(%x ‖ %x) = %d bytes, %v; want %d", enc, suffix, n, err, len(enc))
			}
			if bsonx.Compare(got, v) != 0 {
				fail("Round trip: decoded %s", show(got))
			}
			if again := keystring.Append(nil, got); !bytes.Equal(again, k.asc) {
				fail("Round trip: decoded %s re-encodes as %x", show(got), again)
			}
			if mustLen(got) != len(got.Data) {
				fail("Decode produced malformed BSON: %s % x", show(got), got.Data)
			}
		}
	}
	return k
}

type keys struct{ asc, desc []byte }

// checkOrder checks Order and Equality on two values' encodings.
func checkOrder(t *testing.T, a, b bsoncore.Value, ka, kb keys) {
	t.Helper()
	want := bsonx.Compare(a, b)
	if got := sign(bytes.Compare(ka.asc, kb.asc)); got != want {
		t.Fatalf("Order: bytes.Compare(Append(a), Append(b)) = %d, bsonx.Compare = %d\na = %s\n    %x\nb = %s\n    %x",
			got, want, show(a), ka.asc, show(b), kb.asc)
	}
	if got := sign(bytes.Compare(ka.desc, kb.desc)); got != -want {
		t.Fatalf("Order: bytes.Compare(AppendDesc(a), AppendDesc(b)) = %d, want %d\na = %s\nb = %s", got, -want, show(a), show(b))
	}
}

// checkTuple checks Self-delimiting: the compound keys (a asc, c desc) and
// (b asc, d desc) sort as the tuples.
func checkTuple(t *testing.T, a, b, c, d bsoncore.Value) {
	t.Helper()
	want := bsonx.Compare(a, b)
	if want == 0 {
		want = -bsonx.Compare(c, d)
	}
	ac := keystring.AppendDesc(keystring.Append(nil, a), c)
	bd := keystring.AppendDesc(keystring.Append(nil, b), d)
	if got := sign(bytes.Compare(ac, bd)); got != want {
		t.Fatalf("Self-delimiting: compound keys compare %d, tuples %d\na = %s\nb = %s\nc = %s\nd = %s",
			got, want, show(a), show(b), show(c), show(d))
	}
	if n, err := keystring.Len(ac); err != nil || n != len(ac)-len(keystring.AppendDesc(nil, c)) {
		t.Fatalf("Len of compound key %x = %d, %v", ac, n, err)
	}
}

func invert(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = ^c
	}
	return out
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
