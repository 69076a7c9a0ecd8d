package testcorpus

import (
	"os"
	"slices"
	"strings"
)

// Replacement says that lines [Start, End) (0-based) of File are to be
// replaced by Lines: a case's expectation rewritten from its outcome.
type Replacement struct {
	File       string
	Start, End int
	Lines      []string
}

// ReplaceLines applies replacements to their files. Replacements of one
// file must not overlap; they are applied from the bottom up so that the
// line numbers of the others stay valid. Nothing else in a file changes.
func ReplaceLines(reps []Replacement) error {
	byFile := map[string][]Replacement{}
	for _, r := range reps {
		byFile[r.File] = append(byFile[r.File], r)
	}
	for file, rs := range byFile {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		lines := strings.Split(string(data), "\n")
		slices.SortFunc(rs, func(a, b Replacement) int { return b.Start - a.Start })
		for _, r := range rs {
			lines = slices.Replace(lines, r.Start, r.End, r.Lines...)
		}
		if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			return err
		}
	}
	return nil
}
