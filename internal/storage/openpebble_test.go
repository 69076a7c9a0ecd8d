package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// optionsFile returns the OPTIONS file Pebble wrote in dir: every option
// it was opened with that Pebble records (cache and memtable sizes, each
// level's filter and compression, the format).
func optionsFile(t *testing.T, dir string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "OPTIONS-*"))
	if err != nil || len(m) != 1 {
		t.Fatalf("OPTIONS files in %s: %v %v", dir, m, err)
	}
	b, err := os.ReadFile(m[0])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestOpenPebbleOptionsAreTheStores checks invariant "The floor's Pebble
// is the store's": OpenPebble opens Pebble with the options Open opens a
// store's Pebble with, defaults included — and Pebble's own defaults differ
// from them, so the comparison can fail.
func TestOpenPebbleOptionsAreTheStores(t *testing.T) {
	for _, c := range []struct {
		name string
		opts Options
	}{
		{"defaults", Options{}},
		{"small cache", Options{CacheSize: 64 << 20}},
		{"no document cache", Options{CacheSize: 512 << 20, DocumentCacheSize: -1}},
		{"large document cache", Options{CacheSize: 1 << 30, DocumentCacheSize: 512 << 20}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.opts.Logger = discardLogger()
			storeDir, floorDir := t.TempDir(), t.TempDir()
			db, err := Open(storeDir, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			store := optionsFile(t, storeDir)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			pdb, err := OpenPebble(floorDir, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			floor := optionsFile(t, floorDir)
			if err := pdb.Close(); err != nil {
				t.Fatal(err)
			}
			if floor != store {
				t.Fatalf("OpenPebble's options differ from the store's:\n--- store\n%s\n--- OpenPebble\n%s", store, floor)
			}
			def, err := c.opts.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{
				fmt.Sprintf("mem_table_size=%d\n", memTableSize(def.CacheSize)),
				fmt.Sprintf("cache_size=%d\n", def.CacheSize-def.DocumentCacheSize),
			} {
				if !strings.Contains(floor, want) {
					t.Errorf("OpenPebble's options lack %q:\n%s", want, floor)
				}
			}
			// Pebble as it ships differs (the floor before session 15).
			plainDir := t.TempDir()
			plain, err := pebble.Open(plainDir, &pebble.Options{FormatMajorVersion: pebble.FormatNewest})
			if err != nil {
				t.Fatal(err)
			}
			defaults := optionsFile(t, plainDir)
			if err := plain.Close(); err != nil {
				t.Fatal(err)
			}
			if defaults == floor {
				t.Fatal("Pebble's defaults read the same as the store's options: the comparison cannot fail")
			}
		})
	}
	if _, err := OpenPebble(t.TempDir(), Options{SyncInterval: 1}); err == nil {
		t.Error("OpenPebble accepted a sync interval it does not honour")
	}
}
