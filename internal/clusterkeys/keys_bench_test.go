package clusterkeys

import (
	"testing"
	"time"

	"github.com/cairndb/cairn/internal/hlc"
)

// BenchmarkSign is the cost a member with --auth adds to each reply of an
// ordinary client: the signature of the reply's $clusterTime. Replies in
// one range of times (and under one key) reuse the last signature
// ("Proofs cover a range"); fresh is an HMAC each time.
func BenchmarkSign(b *testing.B) {
	keys := New(&memBacking{})
	now := hlc.New(1_000_000, 0)
	if err := keys.Rotate(now, time.Hour); err != nil {
		b.Fatal(err)
	}
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			if _, _, ok := keys.Sign(now + 1); !ok {
				b.Fatal("no signature")
			}
		}
	})
	b.Run("fresh", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++ // two ranges in turn: the cache never holds the one asked for
			if _, _, ok := keys.Sign(now + hlc.Timestamp(i%2)<<16); !ok {
				b.Fatal("no signature")
			}
		}
	})
}

// BenchmarkValidate is the cost of checking a client's $clusterTime that
// would advance the clock.
func BenchmarkValidate(b *testing.B) {
	keys := New(&memBacking{})
	now := hlc.New(1_000_000, 0)
	if err := keys.Rotate(now, time.Hour); err != nil {
		b.Fatal(err)
	}
	hash, id, _ := keys.Sign(now)
	for b.Loop() {
		if err := keys.Validate(now, hash, id); err != nil {
			b.Fatal(err)
		}
	}
}
