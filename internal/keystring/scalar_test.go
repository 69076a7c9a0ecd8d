package keystring_test

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx/bsonxtest"
	"github.com/cairndb/cairn/internal/keystring"
)

// TestAppendScalarIsAppend: AppendScalar writes exactly Append's bytes for
// every value that is not a document, an array or code with scope, and
// declines those (dst untouched), for random values of every type, some
// malformed, after a prefix. -seed replays a run (the seed is logged).
func TestAppendScalarIsAppend(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d", seed)
	g := bsonxtest.New(rand.New(rand.NewPCG(seed, seed)))
	g.Malformed = 0.05
	prefix := []byte{9, 8, 7}
	scalars, nested := 0, 0
	for range *pairsFlag {
		v := g.Value()
		got, ok := keystring.AppendScalar(bytes.Clone(prefix), v)
		switch v.Type {
		case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray, bsoncore.TypeCodeWithScope:
			nested++
			if ok || !bytes.Equal(got, prefix) {
				t.Fatalf("AppendScalar(%s) = %x, %v: want the prefix alone, false", show(v), got, ok)
			}
			continue
		}
		scalars++
		if want := keystring.Append(bytes.Clone(prefix), v); !ok || !bytes.Equal(got, want) {
			t.Fatalf("AppendScalar(%s) = %x, %v; Append gives %x", show(v), got, ok, want)
		}
	}
	if scalars < *pairsFlag/4 || nested < *pairsFlag/20 {
		t.Errorf("%d scalars and %d nested values of %d: the generator drifted", scalars, nested, *pairsFlag)
	}
}

// TestAppendScalarStaysOnTheStack pins why AppendScalar exists: a key
// built in a buffer on the caller's stack does not move to the heap (with
// Append in its place the buffer escapes: one allocation per call).
func TestAppendScalarStaysOnTheStack(t *testing.T) {
	for _, v := range []bsoncore.Value{i32(7), i64(1 << 60), dbl(0.1), str("user6284781860667377211"), bsonxtest.ObjectID(3)} {
		if n := testing.AllocsPerRun(100, func() {
			var kb [64]byte
			if _, ok := keystring.AppendScalar(kb[:0], v); !ok {
				t.Fatalf("AppendScalar(%s) declined", show(v))
			}
		}); n != 0 {
			t.Errorf("AppendScalar(%s) into a stack buffer allocates %v times", show(v), n)
		}
	}
}
