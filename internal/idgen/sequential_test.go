package idgen

import (
	"math"
	"regexp"
	"testing"
)

var idFormat = regexp.MustCompile(`^[0-9a-f]{28}$`)

func TestFormat(t *testing.T) {
	s, err := NewSequential(Config{Prefix: 0xbeef, Offset: 1, Increment: 1}, 0x6075f681, nil)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := s.Next()
	if !idFormat.MatchString(id) {
		t.Fatalf("id %q is not 28 lower-case hex characters", id)
	}
	if want := "beef" + "6075f681" + "0000000000000001"; id != want {
		t.Fatalf("id = %s, want %s", id, want)
	}
}

func TestOffsetAndIncrement(t *testing.T) {
	s, _ := NewSequential(Config{Offset: 3, Increment: 5}, 100, nil)
	var serials []string
	for range 3 {
		id, _ := s.Next()
		serials = append(serials, id[12:])
	}
	want := []string{"0000000000000003", "0000000000000008", "000000000000000d"}
	for i := range want {
		if serials[i] != want[i] {
			t.Fatalf("serials = %v, want %v", serials, want)
		}
	}
}

func TestStrictlyIncreasingAndOverflow(t *testing.T) {
	var persisted []uint32
	s, _ := NewSequential(Config{Offset: 1, Increment: 1}, 7, func(ts uint32) error {
		persisted = append(persisted, ts)
		return nil
	})
	prev, _ := s.Next()
	s.serial = math.MaxUint64 - 1 // near the end of the serial space
	for range 5 {
		id, err := s.Next()
		if err != nil {
			t.Fatal(err)
		}
		if id <= prev {
			t.Fatalf("id %s does not follow %s", id, prev)
		}
		prev = id
	}
	if len(persisted) != 1 || persisted[0] != 8 {
		t.Fatalf("overflow persisted %v, want the next timestamp [8] persisted once", persisted)
	}
	if prev[4:12] != "00000008" {
		t.Fatalf("after overflow the timestamp part is %s, want 00000008", prev[4:12])
	}
}

func TestStartTimestamp(t *testing.T) {
	cases := []struct {
		now  int64
		last uint32
		want uint32
	}{
		{1000, 0, 1000},
		{1000, 999, 1000},
		{1000, 1000, 1001}, // restarted within the same second
		{900, 1000, 1001},  // clock went backwards
	}
	for _, c := range cases {
		if got := StartTimestamp(c.now, c.last); got != c.want {
			t.Errorf("StartTimestamp(%d, %d) = %d, want %d", c.now, c.last, got, c.want)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	for _, cfg := range []Config{{Offset: 0, Increment: 1}, {Offset: 1, Increment: 0}, {Offset: 1, Increment: 70000}} {
		if _, err := NewSequential(cfg, 1, nil); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
}

func TestChangingIncrementKeepsOrder(t *testing.T) {
	s, _ := NewSequential(Config{Offset: 1, Increment: 1}, 50, func(uint32) error { return nil })
	a, _ := s.Next()
	a2, _ := s.Next()
	if err := s.SetConfig(Config{Offset: 1, Increment: 10}); err != nil {
		t.Fatal(err)
	}
	b, _ := s.Next()
	if !(a < a2 && a2 < b) {
		t.Fatalf("ids not increasing across a config change: %s %s %s", a, a2, b)
	}
}
