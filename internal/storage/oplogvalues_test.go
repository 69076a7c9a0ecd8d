package storage

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// TestOplogValuesWrittenOnce checks invariant "Oplog values written once":
// the first flush writes the oplog's values of at least 256 bytes into blob
// files and its tables only reference them; every other keyspace keeps its
// values in its tables; a compaction of the whole store rewrites no blob
// bytes; and every value reads back as written.
func TestOplogValuesWrittenOnce(t *testing.T) {
	for _, c := range []struct {
		name     string
		space    byte
		size     int
		wantBlob bool
	}{
		{"oplog entries", SpaceOplog, 1024, true},
		{"oplog entries at the minimum", SpaceOplog, 256, true},
		{"small oplog entries", SpaceOplog, 200, false},
		{"documents", SpaceDocument, 1024, false},
		{"index entries", SpaceIndex, 1024, false},
		{"history versions", SpaceHistory, 1024, false},
		{"retry records", SpaceRetry, 1024, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := openTest(t, Options{CacheSize: 64 << 20})
			key := func(i int) []byte {
				if c.space == SpaceOplog {
					return binary.BigEndian.AppendUint64([]byte{SpaceOplog}, uint64(i+1))
				}
				return binary.BigEndian.AppendUint64(Prefix(nil, c.space, 7), uint64(i))
			}
			val := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, c.size) }
			// Even keys, then odd ones, each flushed: two L0 tables whose
			// ranges overlap, so the compaction below merges them (a move
			// would rewrite nothing whatever the values' place).
			const n = 200
			for half := range 2 {
				if err := db.Write(func(tx *Txn) error {
					for i := half; i < n; i += 2 {
						tx.Set(key(i), val(i))
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				if err := db.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			blobs := func() (refs int) {
				levels, err := db.Pebble().SSTables()
				if err != nil {
					t.Fatal(err)
				}
				for _, level := range levels {
					for _, tb := range level {
						if tb.Smallest.UserKey[0] == c.space {
							refs += len(tb.GetBlobReferenceFiles())
						}
					}
				}
				return refs
			}
			if got := blobs() > 0; got != c.wantBlob {
				t.Fatalf("after the flush: tables reference blob files %v, want %v", got, c.wantBlob)
			}
			before := db.Pebble().Metrics().BlobFiles.LiveSize
			if err := db.Pebble().Compact(t.Context(), []byte{0}, []byte{0xff}, true); err != nil {
				t.Fatal(err)
			}
			m := db.Pebble().Metrics()
			var rewritten uint64
			for l := 1; l < len(m.Levels); l++ {
				rewritten += m.Levels[l].BlobBytesCompacted
			}
			if m.Compact.DefaultCount == 0 {
				t.Fatalf("no compaction merged tables: %d moved", m.Compact.MoveCount)
			}
			if rewritten != 0 || m.BlobFiles.LiveSize != before {
				t.Errorf("the compaction wrote %d blob bytes; blob files %d bytes, %d before", rewritten, m.BlobFiles.LiveSize, before)
			}
			if got := blobs() > 0; got != c.wantBlob {
				t.Errorf("after the compaction: tables reference blob files %v, want %v", got, c.wantBlob)
			}
			for i := range n {
				v, ok, err := db.Get(nil, key(i))
				if err != nil || !ok || !bytes.Equal(v, val(i)) {
					t.Fatalf("key %d: %d bytes, found %v, %v", i, len(v), ok, err)
				}
			}
		})
	}
}
