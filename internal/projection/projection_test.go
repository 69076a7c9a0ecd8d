package projection

import (
	"testing"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// TestTreeRules checks the rules both dialects share, by code: path
// collisions and the mixtures of modes MongoDB refuses. The corpora of
// query (find) and agg ($project, $addFields, $unset) check the rest.
func TestTreeRules(t *testing.T) {
	leaf := func(k Kind) *Node { return &Node{Kind: k} }
	for _, tc := range []struct {
		name  string
		paths [][]string
		want  mongoerr.Code
	}{
		{"distinct paths", [][]string{{"a"}, {"b", "c"}, {"b", "d"}}, 0},
		{"same path twice", [][]string{{"a", "b"}, {"a", "b"}}, codePathCollisionEnd},
		{"prefix first", [][]string{{"a"}, {"a", "b"}}, codePathCollision},
		{"prefix second", [][]string{{"a", "b"}, {"a"}}, codePathCollisionEnd},
	} {
		root := NewInner()
		var err error
		for _, p := range tc.paths {
			if err = root.Add(p, leaf(Include)); err != nil {
				break
			}
		}
		if got := mongoerr.CodeOf(err); err != nil && got != tc.want || err == nil && tc.want != 0 {
			t.Errorf("%s: error %v, want code %d", tc.name, err, tc.want)
		}
	}
	for _, tc := range []struct {
		name  string
		steps func(m *Modes) error
		want  mongoerr.Code
	}{
		{"include then exclude", func(m *Modes) error { _ = m.Include("a"); return m.Exclude("b") }, codeExcInInclusion},
		{"exclude then include", func(m *Modes) error { _ = m.Exclude("a"); return m.Include("b") }, codeIncInExclusion},
		{"exclude then operator", func(m *Modes) error { _ = m.Exclude("a"); return m.Compute("$add", true) }, codeExprInExclusion},
		{"exclude then literal", func(m *Modes) error { _ = m.Exclude("a"); return m.Compute("x: 1", false) }, codeLiteralExclusion},
		{"computed makes an inclusion", func(m *Modes) error { _ = m.Compute("x", false); return m.Exclude("b") }, codeExcInInclusion},
		{"computed only takes computed fields", func(m *Modes) error { m.Mode = ComputedOnly; return m.Compute("x", true) }, 0},
	} {
		m := &Modes{Prefix: "Invalid $project :: caused by :: "}
		err := tc.steps(m)
		if got := mongoerr.CodeOf(err); err != nil && got != tc.want || err == nil && tc.want != 0 {
			t.Errorf("%s: error %v, want code %d", tc.name, err, tc.want)
		}
	}
}
