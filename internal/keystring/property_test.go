package keystring_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/bsonx/bsonxtest"
	"github.com/cairndb/cairn/internal/keystring"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestRandomPairs is the property test: for random pairs of values (of all
// types, nested, numbers at type boundaries, near-equal by construction,
// some malformed), every invariant holds. -pairs sets the count, -seed
// replays a failure.
func TestRandomPairs(t *testing.T) {
	g := bsonxtest.New(newRand(t))
	g.Malformed = 0.03
	equal := 0
	for range *pairsFlag {
		a, b := g.Pair()
		c, d := g.Pair()
		checkPair(t, a, b, c, d)
		if bsonx.Compare(a, b) == 0 {
			equal++
		}
	}
	// Near-equal pairs are what make the test bite; make sure there are some.
	if equal < *pairsFlag/20 {
		t.Errorf("only %d of %d pairs are equal: the generator drifted", equal, *pairsFlag)
	}
}

// TestRandomNumbers compares random numbers of all four types: the
// encoding's hardest part, where types differ but values are close.
func TestRandomNumbers(t *testing.T) {
	g := bsonxtest.New(newRand(t))
	for range *pairsFlag {
		a, b := g.NumberPair()
		checkOrder(t, a, b, checkValue(t, a), checkValue(t, b))
	}
}

// FuzzOrder lets the fuzzer steer the value generator (each input byte one
// choice), then checks every invariant on the pairs it makes. It also reads
// the input as one raw BSON value (type byte, then data), malformed as it
// may be, and orders it against the generated ones.
func FuzzOrder(f *testing.F) {
	for _, seed := range []string{
		"", "\x00", "\xff\xff\xff\xff", "\x01\x02\x03\x04\x05\x06\x07\x08",
		"\x10\x01\x00\x00\x00", "\x01\x00\x00\x00\x00\x00\x00\xf0\x3f", "\x13\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x40\x30",
		"\x02\x02\x00\x00\x00a\x00", "\x03\x05\x00\x00\x00\x00", "\x04\x0c\x00\x00\x00\x10\x30\x00\x07\x00\x00\x00\x00",
		"\x40\x80\xc0\xff\x20\x60\xa0\xe0\x10\x50\x90\xd0",
	} {
		f.Add([]byte(seed))
	}
	for _, v := range bsonxtest.Interesting()[:60] {
		f.Add(append([]byte{byte(v.Type)}, v.Data...))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// A few hundred choices make plenty of values; a cap keeps each
		// execution, and the minimizing of long inputs, cheap.
		data = data[:min(len(data), 512)]
		g := bsonxtest.New(rand.New(bsonxtest.NewByteSource(data)))
		g.Malformed = 0.1
		a, b := g.Pair()
		c, d := g.Pair()
		checkPair(t, a, b, c, d)
		if len(data) > 0 {
			r := bsoncore.Value{Type: bsoncore.Type(data[0]), Data: data[1:]}
			kr := checkValue(t, r)
			checkOrder(t, r, a, kr, checkValue(t, a))
			checkOrder(t, r, b, kr, checkValue(t, b))
		}
	})
}

// FuzzDecode feeds arbitrary bytes to Len and Decode: they must not panic,
// must agree where both succeed, and whatever Decode accepts must be exactly
// what Append (or AppendDesc) writes for the decoded value.
func FuzzDecode(f *testing.F) {
	for _, v := range bsonxtest.Interesting() {
		k := keystring.Append(nil, v)
		f.Add(k)
		f.Add(keystring.AppendDesc(nil, v))
		f.Add(k[:len(k)/2])
	}
	f.Add([]byte{})
	f.Add([]byte{0x31, 0x01, 0x00})
	f.Add([]byte{0x64, 0x08, 0x61, 0x00, 0x00, 0x31, 0x00, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		n, lenErr := keystring.Len(data)
		if lenErr == nil && (n <= 0 || n > len(data)) {
			t.Fatalf("Len(%x) = %d out of range", data, n)
		}
		v, dn, err := keystring.Decode(data)
		if err != nil {
			return
		}
		if lenErr != nil || n != dn {
			t.Fatalf("Decode(%x) took %d bytes, Len says %d, %v", data, dn, n, lenErr)
		}
		if mustLen(v) != len(v.Data) {
			t.Fatalf("Decode(%x) produced malformed BSON %s", data, show(v))
		}
		again := keystring.Append(nil, v)
		if data[0] >= 0x80 {
			again = keystring.AppendDesc(nil, v)
		}
		if !bytes.Equal(again, data[:dn]) {
			t.Fatalf("Canonical: Decode(%x) = %s, which encodes as %x", data[:dn], show(v), again)
		}
	})
}
