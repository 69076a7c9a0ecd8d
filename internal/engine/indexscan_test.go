package engine

import (
	"testing"

	"github.com/cairndb/cairn/internal/catalog"
)

// TestReadyBefore checks invariant "Reader catalog brackets its snapshot":
// an index serves a reader only if the catalog read before the snapshot
// already held it ready.
func TestReadyBefore(t *testing.T) {
	was := &catalog.Collection{Indexes: []catalog.Index{
		{ID: 20, Name: "a_1"},
		{ID: 21, Name: "b_1", Building: true},
	}}
	for _, c := range []struct {
		name string
		was  *catalog.Collection
		id   uint64
		want bool
	}{
		{"catalog unchanged", nil, 99, true},
		{"ready before", was, 20, true},
		{"still building before", was, 21, false},
		{"created after the first read", was, 22, false},
		{"collection created after the first read", &catalog.Collection{}, 20, false},
	} {
		if got := readyBefore(c.was, c.id); got != c.want {
			t.Errorf("%s: readyBefore(id %d) = %v, want %v", c.name, c.id, got, c.want)
		}
	}
}
