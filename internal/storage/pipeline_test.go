package storage

import "testing"

func TestBatchSizeHint(t *testing.T) {
	for _, c := range []struct{ last, want int }{
		{0, 0},
		{1000, 1250},               // a quarter of slack for a slightly larger next group
		{1 << 20, 5 << 18},         // a 1 MiB group, past what Pebble's batch pool keeps
		{maxSizeHint, maxSizeHint}, // one huge group does not make every later one huge
		{4 * maxSizeHint, maxSizeHint},
	} {
		if got := batchSizeHint(c.last); got != c.want {
			t.Errorf("batchSizeHint(%d) = %d, want %d", c.last, got, c.want)
		}
	}
}

// TestGroupBatchStartsWithRoom checks that the group after a large one gets
// a batch with room for as much, instead of growing one from Pebble's 1 KiB.
func TestGroupBatchStartsWithRoom(t *testing.T) {
	db := openTest(t, Options{})
	value := make([]byte, 1100)
	write := func(tag byte) {
		t.Helper()
		err := db.Write(func(tx *Txn) error {
			for i := range 1000 {
				tx.Set([]byte{'d', tag, byte(i >> 8), byte(i)}, value)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	write(1)
	if db.pipe.sizeHint < 1000*len(value) {
		t.Fatalf("after a group of 1,000 %d-byte values the next batch starts with %d bytes", len(value), db.pipe.sizeHint)
	}
	write(2)
	if v, ok := mustGet(t, db, "d\x02\x03\xe7"); !ok || len(v) != len(value) {
		t.Fatalf("last key of the second group: found %v, %d bytes", ok, len(v))
	}
}
