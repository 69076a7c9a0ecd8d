package storage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// TestMissingKeysUseBloomFilters checks that point reads of absent keys (the
// uniqueness check of an insert) are answered by the tables' bloom filters
// instead of searching their data blocks.
func TestMissingKeysUseBloomFilters(t *testing.T) {
	db := openTest(t, Options{})
	err := db.Write(func(tx *Txn) error {
		for i := range 1000 {
			tx.Set(fmt.Appendf(nil, "d/%06d", 2*i), []byte("v"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		if _, ok := mustGet(t, db, fmt.Sprintf("d/%06d", 2*i+1)); ok {
			t.Fatalf("d/%06d found, never written", 2*i+1)
		}
	}
	if v, ok := mustGet(t, db, "d/001998"); !ok || v != "v" {
		t.Fatalf("d/001998 = %q, %v after the flush", v, ok)
	}
	f := db.Pebble().Metrics().Filter
	if f.Hits < 900 {
		t.Fatalf("bloom filters answered %d of 1,000 reads of absent keys (misses %d), want nearly all", f.Hits, f.Misses)
	}
}

// TestDeepLevelsCompressWhatPays checks adaptiveCompression: below L1, a
// collection of random values (which no compression shrinks) is stored
// uncompressed and one of repetitive values compressed; and memTableSize's
// range.
func TestDeepLevelsCompressWhatPays(t *testing.T) {
	for _, c := range []struct{ cache, want int64 }{{1 << 20, 4 << 20}, {256 << 20, 16 << 20}, {1 << 30, 64 << 20}, {12 << 30, 64 << 20}} {
		if got := memTableSize(c.cache); got != uint64(c.want) {
			t.Errorf("memTableSize(%d) = %d, want %d", c.cache, got, c.want)
		}
	}
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	db := openTest(t, Options{CacheSize: 64 << 20})
	const random, repetitive = 1, 2
	err := db.Write(func(tx *Txn) error {
		v := make([]byte, 1024)
		for i := range 3000 {
			for j := range v {
				v[j] = byte(rng.Uint32())
			}
			tx.Set(DocKey(nil, random, fmt.Appendf(nil, "%06d", i)), v)
			tx.Set(DocKey(nil, repetitive, fmt.Appendf(nil, "%06d", i)), []byte(strings.Repeat(fmt.Sprintf("field %d of document %d; ", i%7, i), 40)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Pebble().Compact(context.Background(), []byte{0}, []byte{0xff}, false); err != nil {
		t.Fatal(err)
	}
	levels, err := db.Pebble().SSTables(pebble.WithProperties())
	if err != nil {
		t.Fatal(err)
	}
	var stored, raw [3]int64 // by collection
	for level, tables := range levels {
		for _, tb := range tables {
			coll := CollectionOfKey(tb.Smallest.UserKey)
			if coll != random && coll != repetitive {
				continue
			}
			if level < uncompressedLevels {
				t.Fatalf("collection %d's table in L%d after a full compaction", coll, level)
			}
			// CompressionStats: "<setting>:<stored bytes>/<raw bytes>,…"
			for _, part := range strings.Split(tb.Properties.CompressionStats, ",") {
				_, sizes, _ := strings.Cut(part, ":")
				a, b, _ := strings.Cut(sizes, "/")
				x, err1 := strconv.ParseInt(a, 10, 64)
				y, err2 := strconv.ParseInt(b, 10, 64)
				if err1 != nil || err2 != nil {
					t.Fatalf("compression stats %q", tb.Properties.CompressionStats)
				}
				stored[coll] += x
				raw[coll] += y
			}
		}
	}
	if raw[random] < 3000*1024 || stored[random] != raw[random] {
		t.Errorf("random values: %d bytes stored for %d, want all of them stored uncompressed", stored[random], raw[random])
	}
	if raw[repetitive] == 0 || stored[repetitive]*2 > raw[repetitive] {
		t.Errorf("repetitive values: %d bytes stored for %d, want them compressed", stored[repetitive], raw[repetitive])
	}
}
