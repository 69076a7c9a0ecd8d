// Package testcorpus runs data-driven test corpora: the query, update and
// aggregation languages each keep cases in testdata files with their own
// format, and share this runner so that a case behaves the same everywhere
// (a subtest per case, expected failures that must keep failing, rewriting
// expectations from outcomes on request). It also holds what the formats
// have in common: the stanza reader (ReadStanzas), extended JSON parsing and
// printing (ParseDoc, Canonical, Relaxed, …) and the line replacement behind
// rewriting (ReplaceLines).
package testcorpus

import (
	"path/filepath"
	"sort"
	"testing"
)

// Suite tells the runner how to handle one corpus's case type C and outcome
// type O.
type Suite[C, O any] struct {
	// ID names a case for subtests and messages (file:line and name).
	ID func(*C) string
	// XFail is the reason a case is expected to fail, or "".
	XFail func(*C) string
	// Check compares an outcome with the case's expectation.
	Check func(*C, O) error
	// Rewrite writes outcomes back as the cases' expectations.
	Rewrite func([]C, []O) error
}

// Run runs every case as a subtest. A case marked xfail must fail: if it
// passes, the test fails so that the stale mark is removed. With rewrite,
// expectations are replaced by the outcomes (review the diff!).
func (s Suite[C, O]) Run(t *testing.T, cases []C, run func(*C) (O, error), rewrite bool) {
	t.Helper()
	outcomes := make([]O, len(cases))
	for i := range cases {
		c := &cases[i]
		id := s.ID(c)
		t.Run(id, func(t *testing.T) {
			o, err := run(c)
			if err != nil {
				t.Fatalf("%s: harness: %v", id, err)
			}
			outcomes[i] = o
			if rewrite {
				return
			}
			err = s.Check(c, o)
			xfail := s.XFail(c)
			switch {
			case xfail != "" && err == nil:
				t.Errorf("%s: passes but is marked xfail (%s); remove the xfail", id, xfail)
			case xfail != "":
				t.Logf("%s: expected failure (%s): %v", id, xfail, err)
			case err != nil:
				t.Errorf("%s: %v", id, err)
			}
		})
	}
	if rewrite {
		if err := s.Rewrite(cases, outcomes); err != nil {
			t.Fatal(err)
		}
	}
}

// Load reads every *.txt file of dir, in name order, with loadFile (each
// corpus's own stanza format).
func Load[C any](dir string, loadFile func(string) ([]C, error)) ([]C, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var all []C
	for _, f := range files {
		cs, err := loadFile(f)
		if err != nil {
			return nil, err
		}
		all = append(all, cs...)
	}
	return all, nil
}
