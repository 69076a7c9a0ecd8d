package storage

import "testing"

func TestDefaultCacheSize(t *testing.T) {
	const gib = 1 << 30
	for _, c := range []struct{ total, want int64 }{
		{0, 256 << 20},               // unknown memory: the minimum
		{1 * gib, 256 << 20},         // half of nothing left: the minimum
		{2 * gib, 512 << 20},         // half of 1 GiB
		{24 * gib, 23 * gib / 2},     // 11.5 GiB
		{1 * gib / 2, 256 << 20},     // less than 1 GiB: the minimum
		{1*gib + 100<<20, 256 << 20}, // 50 MiB is below the minimum
	} {
		if got := DefaultCacheSize(c.total); got != c.want {
			t.Errorf("DefaultCacheSize(%d) = %d, want %d", c.total, got, c.want)
		}
	}
	if m := MachineMemory(); m < 0 {
		t.Errorf("MachineMemory() = %d", m)
	}
}

func TestCacheStatsReportsCapacity(t *testing.T) {
	db := openTest(t, Options{CacheSize: 32 << 20})
	if s := db.CacheStats(); s.Capacity != 32<<20 || s.Size < 0 {
		t.Fatalf("CacheStats = %+v, want capacity %d", s, 32<<20)
	}
}
