package index

import (
	"math/bits"
	"slices"
	"strings"
)

// Multikey records which paths of an index held arrays: for one document
// (from Keys) or, merged with Add, for a whole collection. MongoDB keeps
// the same per index (isMultiKey, multiKeyPaths in explain); the planner
// needs it to decide whether bounds on a field may be intersected or
// compounded. The zero value means no arrays.
type Multikey struct {
	// Components has, for each field of the key pattern, the positions
	// (0-based, increasing) of the components of its path that held an
	// array which the index expanded: {"a.b.c": 1} over {a: [{b: {c: [1,
	// 2]}}]} gives [0, 2]. Nil when no field went through an array. Unused
	// by wildcard indexes.
	Components [][]int
	// Paths lists, sorted, the paths that held arrays under a wildcard
	// index ("a", "a.b"); MongoDB stores them as multikey metadata keys.
	Paths []string
}

// IsMultikey reports whether any path held an array.
func (m Multikey) IsMultikey() bool {
	for _, c := range m.Components {
		if len(c) > 0 {
			return true
		}
	}
	return len(m.Paths) > 0
}

// Add merges o into m.
func (m *Multikey) Add(o Multikey) {
	if len(o.Components) > 0 {
		if len(m.Components) < len(o.Components) {
			m.Components = append(m.Components, make([][]int, len(o.Components)-len(m.Components))...)
		}
		for i, c := range o.Components {
			for _, x := range c {
				if j, found := slices.BinarySearch(m.Components[i], x); !found {
					m.Components[i] = slices.Insert(m.Components[i], j, x)
				}
			}
		}
	}
	for _, p := range o.Paths {
		if j, found := slices.BinarySearch(m.Paths, p); !found {
			m.Paths = slices.Insert(m.Paths, j, p)
		}
	}
}

// PathNames renders m as explain's multiKeyPaths does: for each field of
// the key pattern, the dotted prefixes of its path that held arrays
// ({"a.b": ["a"]}). Wildcard indexes have their Paths instead.
func (s *Spec) PathNames(m Multikey) [][]string {
	out := make([][]string, len(s.KeyPattern))
	for i, f := range s.KeyPattern {
		out[i] = []string{}
		if i >= len(m.Components) {
			continue
		}
		for _, c := range m.Components[i] {
			if c < len(f.Parts) {
				out[i] = append(out[i], strings.Join(f.Parts[:c+1], "."))
			}
		}
	}
	return out
}

// componentSet is the set of multikey components of one field during key
// generation: a bitmap, because documents nest at most bsonx.MaxDepth (200)
// levels and an array at component j needs j+1 levels.
type componentSet [4]uint64

func (c *componentSet) add(j int) {
	if j >= 0 && j < 256 {
		c[j/64] |= 1 << (j % 64)
	}
}

func (c *componentSet) count() int {
	return bits.OnesCount64(c[0]) + bits.OnesCount64(c[1]) + bits.OnesCount64(c[2]) + bits.OnesCount64(c[3])
}

// appendTo appends the components in increasing order.
func (c *componentSet) appendTo(out []int) []int {
	for w, word := range c {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			out = append(out, w*64+b)
			word &^= 1 << b
		}
	}
	return out
}
