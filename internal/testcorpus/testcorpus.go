// Package testcorpus runs data-driven test corpora: the query, update and
// aggregation languages and the planner each keep cases in testdata files
// with their own keys, and share this runner so that a case behaves the
// same everywhere (a subtest per case, expected failures that must keep
// failing, rewriting expectations from outcomes on request). It also holds
// what the formats have in common: the stanza reader (ReadStanzas), the
// keys every case has (Header: case, xfail, error, the expectation),
// extended JSON parsing and printing (ParseDoc, Canonical, Relaxed, …) and
// the line replacement behind rewriting (ReplaceLines).
package testcorpus

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"testing"
)

// Header is what every case has, whatever its corpus: where it is, its
// name, why it is expected to fail, and its expectation, which is exactly
// one of the corpus's expectation keys ("error: <code>" among them).
type Header struct {
	File string // path of the testdata file
	Line int    // 1-based line of the "case:" key
	Name string
	// XFail is a known gap: the reason the case is expected to fail.
	XFail string
	// WantError is the MongoDB error code the case expects, 0 if none.
	WantError int32
	// ExpKey is the key holding the expectation; ExpStart and ExpEnd are
	// its lines (0-based, end exclusive), which rewriting replaces.
	ExpKey           string
	ExpStart, ExpEnd int
}

// ID is the case's file:line and name, for test names and messages.
func (h *Header) ID() string { return fmt.Sprintf("%s:%d %s", filepath.Base(h.File), h.Line, h.Name) }

// CheckCode compares an outcome's error code (0: success) with the
// expectation. done is true when that settles the case: an error was
// expected, or one happened.
func (h *Header) CheckCode(code int32) (done bool, err error) {
	switch {
	case h.WantError != 0 && code != h.WantError:
		return true, fmt.Errorf("want error code %d, got code %d", h.WantError, code)
	case h.WantError != 0:
		return true, nil
	case code != 0:
		return true, fmt.Errorf("want success, got error code %d", code)
	}
	return false, nil
}

// Corpus describes one corpus's case type C and outcome type O: how its
// stanzas read and how its outcomes are checked and written back.
//
// A file is read in order. A stanza whose first key is not "case" sets
// what the cases after it start from: Template gives a file's starting
// case, and Default applies each entry of such a stanza to it. A case
// stanza starts from a copy of that template (copy maps and slices before
// changing them in place); "case", "xfail" and "error" fill its Header,
// the keys in Expectations record where its expectation is, and Set reads
// every other entry, expectations included.
type Corpus[C, O any] struct {
	Expectations []string
	Template     func() C
	Default      func(tmpl *C, e Entry) error
	Set          func(c *C, e Entry) error
	// Finish checks a case once all its entries are read (nil: nothing to
	// check).
	Finish func(c *C) error
	Header func(c *C) *Header

	// Check compares an outcome with the case's expectation.
	Check func(c *C, o O) error
	// Format writes an outcome as the lines of its expectation, for
	// rewriting.
	Format func(c *C, o O) []string
	// Keep, when set, names cases whose expectation rewriting must keep
	// (besides those marked xfail).
	Keep func(c *C) bool
}

// Load reads every *.txt file of dir, in name order.
func (k Corpus[C, O]) Load(dir string) ([]C, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var all []C
	for _, f := range files {
		cs, err := k.LoadFile(f)
		if err != nil {
			return nil, err
		}
		all = append(all, cs...)
	}
	return all, nil
}

// LoadFile reads one testdata file.
func (k Corpus[C, O]) LoadFile(file string) ([]C, error) {
	var cases []C
	tmpl := k.Template()
	err := ReadStanzas(file, func(stanza []Entry) error {
		if stanza[0].Key != "case" {
			for _, e := range stanza {
				if err := k.Default(&tmpl, e); err != nil {
					return fmt.Errorf("%s:%d: %s: %v", file, e.Line+1, e.Key, err)
				}
			}
			return nil
		}
		c := tmpl
		h := k.Header(&c)
		*h = Header{File: file, Line: stanza[0].Line + 1, Name: stanza[0].Value, ExpStart: -1}
		for _, e := range stanza[1:] {
			if err := k.read(&c, h, e); err != nil {
				return fmt.Errorf("%s:%d: %s: %v", file, e.Line+1, e.Key, err)
			}
		}
		if h.ExpStart < 0 {
			return fmt.Errorf("%s:%d: case %q has no expectation (%s)", file, h.Line, h.Name, k.expectationList())
		}
		if k.Finish != nil {
			if err := k.Finish(&c); err != nil {
				return fmt.Errorf("%s:%d: case %q: %v", file, h.Line, h.Name, err)
			}
		}
		cases = append(cases, c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return cases, nil
}

func (k Corpus[C, O]) read(c *C, h *Header, e Entry) error {
	switch e.Key {
	case "xfail":
		h.XFail = e.Value
		return nil
	case "error":
		n, err := strconv.ParseInt(e.Value, 10, 32)
		if err != nil {
			return err
		}
		h.WantError = int32(n)
	}
	if e.Key == "error" || slices.Contains(k.Expectations, e.Key) {
		if h.ExpStart >= 0 {
			return fmt.Errorf("a case has exactly one of %s", k.expectationList())
		}
		h.ExpKey, h.ExpStart, h.ExpEnd = e.Key, e.Line, e.End
		if e.Key == "error" {
			return nil
		}
	}
	return k.Set(c, e)
}

func (k Corpus[C, O]) expectationList() string {
	s := ""
	for _, key := range k.Expectations {
		s += key + ", "
	}
	return s + "error"
}

// Run runs every case as a subtest. A case marked xfail must fail: if it
// passes, the test fails so that the stale mark is removed. With rewrite,
// the expectations of the cases that ran (go test -run may pick some) are
// replaced by their outcomes (review the diff!).
func (k Corpus[C, O]) Run(t *testing.T, cases []C, run func(*C) (O, error), rewrite bool) {
	t.Helper()
	var ran []C
	var outcomes []O
	for i := range cases {
		c := &cases[i]
		h := k.Header(c)
		id := h.ID()
		t.Run(id, func(t *testing.T) {
			o, err := run(c)
			if err != nil {
				t.Fatalf("%s: harness: %v", id, err)
			}
			ran, outcomes = append(ran, *c), append(outcomes, o)
			if rewrite {
				return
			}
			err = k.Check(c, o)
			switch {
			case h.XFail != "" && err == nil:
				t.Errorf("%s: passes but is marked xfail (%s); remove the xfail", id, h.XFail)
			case h.XFail != "":
				t.Logf("%s: expected failure (%s): %v", id, h.XFail, err)
			case err != nil:
				t.Errorf("%s: %v", id, err)
			}
		})
	}
	if rewrite {
		if err := k.Rewrite(ran, outcomes); err != nil {
			t.Fatal(err)
		}
	}
}

// Rewrite replaces each case's expectation in its file by its outcome, as
// Format writes it. Cases marked xfail, and those Keep names, keep theirs.
func (k Corpus[C, O]) Rewrite(cases []C, outcomes []O) error {
	var reps []Replacement
	for i := range cases {
		c := &cases[i]
		h := k.Header(c)
		if h.XFail != "" || (k.Keep != nil && k.Keep(c)) {
			continue
		}
		reps = append(reps, Replacement{File: h.File, Start: h.ExpStart, End: h.ExpEnd, Lines: k.Format(c, outcomes[i])})
	}
	return ReplaceLines(reps)
}
