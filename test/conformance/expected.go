package main

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

// Expected is the expected-results file: the tests known to fail, each
// with its reason, and the flaky ones, which may pass or fail.
//
//	fail  TestName/sub_test   # one-line reason
//	flaky TestName/other      # why its outcome varies
//
// Every other test that runs must pass or skip. A failing test whose
// subtests include a failure needs no line of its own: its subtest's line
// explains it.
type Expected struct {
	entries map[string]entry
	order   []string
}

type entry struct {
	kind   string // "fail" or "flaky"
	reason string
	line   int
}

// ReadExpected parses an expected-results file.
func ReadExpected(path string) (*Expected, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseExpected(string(b), path)
}

// ParseExpected parses the text of an expected-results file.
func ParseExpected(text, name string) (*Expected, error) {
	e := &Expected{entries: map[string]entry{}}
	n := 0
	for line := range strings.Lines(text) {
		n++
		body, reason, _ := strings.Cut(line, "#")
		fields := strings.Fields(body)
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 2 || (fields[0] != "fail" && fields[0] != "flaky") {
			return nil, fmt.Errorf("%s:%d: want \"fail|flaky TestName # reason\", got %q", name, n, strings.TrimSpace(line))
		}
		reason = strings.TrimSpace(reason)
		if reason == "" {
			return nil, fmt.Errorf("%s:%d: %s has no reason", name, n, fields[1])
		}
		if _, dup := e.entries[fields[1]]; dup {
			return nil, fmt.Errorf("%s:%d: %s is listed twice", name, n, fields[1])
		}
		e.entries[fields[1]] = entry{kind: fields[0], reason: reason, line: n}
		e.order = append(e.order, fields[1])
	}
	return e, nil
}

// Check compares results with the file. run, when not nil, limits the
// listed tests that must have run to the top-level tests it matches.
func (e *Expected) Check(results []Result, run *regexp.Regexp) []string {
	byName := map[string]Status{}
	failedChild := map[string]bool{}
	for _, r := range results {
		byName[r.Name] = r.Status
		if r.Status == Fail {
			for p := r.Name; ; {
				i := strings.LastIndexByte(p, '/')
				if i < 0 {
					break
				}
				p = p[:i]
				failedChild[p] = true
			}
		}
	}
	var problems []string
	for _, r := range results {
		if r.Status != Fail || failedChild[r.Name] {
			continue
		}
		if _, ok := e.entries[r.Name]; !ok {
			problems = append(problems, fmt.Sprintf("unexpected failure: %s", r.Name))
		}
	}
	for _, name := range e.order {
		en := e.entries[name]
		top, _, _ := strings.Cut(name, "/")
		if run != nil && !run.MatchString(top) {
			continue
		}
		st, ran := byName[name]
		switch {
		case !ran:
			problems = append(problems, fmt.Sprintf("listed in line %d but did not run: %s", en.line, name))
		case en.kind == "fail" && st != Fail:
			problems = append(problems, fmt.Sprintf("listed as failing in line %d but %s now (remove the line): %s", en.line, st, name))
		}
	}
	sort.Strings(problems)
	return problems
}
