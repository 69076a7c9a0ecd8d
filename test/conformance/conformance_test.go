package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// subset is the fast, stable part of the suites `make test` runs (under a
// minute once built): retryable writes, SDAM error handling, connections
// surviving a primary step-down, causal consistency, sessions, cursors and
// the server's error and label replies. TestRetryableReadsProse is left to
// `make conformance`: two of its backoff cases take 30 s each.
var subset = regexp.MustCompile(`^(TestRetryableWritesProse|TestSDAMErrorHandling|TestConnectionsSurvivePrimaryStepDown|TestCausalConsistency_Supported|TestSessionsProse|TestCursor|TestWriteConcernError|TestWriteErrorsWithLabels|TestNoWritesPerformedLabel|TestErrorsCodeNamePropagated|TestServerHeartbeatStartedEvent)$`)

// TestConformanceSubset runs the subset against a fresh replica set and
// compares it with expected.txt, as `make conformance` does for all.
func TestConformanceSubset(t *testing.T) {
	exp, err := ReadExpected("expected.txt")
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	cfg := Config{Root: "../..", Run: subset, Timeout: 2 * time.Minute, Work: t.TempDir(), Log: &log, Replicas: 3}
	results, err := RunSuites(context.Background(), cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	t.Logf("%s%s", log.String(), Summary(results))
	if len(results) < 50 {
		t.Fatalf("only %d results: the subset did not run", len(results))
	}
	if problems := exp.Check(results, subset); len(problems) > 0 {
		t.Errorf("%d difference(s) from expected.txt:\n  %s", len(problems), strings.Join(problems, "\n  "))
	}
}

// TestExpectedChecks: the comparison flags a new failure, a listed one
// that passes or did not run, and accepts listed failures, flaky tests
// either way and failing parents of failing subtests.
func TestExpectedChecks(t *testing.T) {
	exp, err := ParseExpected(`
fail  TestA/known   # a reason
flaky TestA/shaky   # varies
fail  TestB/fixed   # was broken
fail  TestC/gone    # renamed upstream
`, "test")
	if err != nil {
		t.Fatal(err)
	}
	results := []Result{
		{Name: "TestA", Status: Fail},
		{Name: "TestA/known", Status: Fail},
		{Name: "TestA/shaky", Status: Pass},
		{Name: "TestA/new", Status: Fail},
		{Name: "TestB", Status: Pass},
		{Name: "TestB/fixed", Status: Pass},
		{Name: "TestC", Status: Pass},
	}
	got := exp.Check(results, nil)
	want := []string{
		"listed as failing in line 4 but pass now (remove the line): TestB/fixed",
		"listed in line 5 but did not run: TestC/gone",
		"unexpected failure: TestA/new",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("Check:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := exp.Check(results, regexp.MustCompile(`^TestA$`)); len(got) != 1 || got[0] != "unexpected failure: TestA/new" {
		t.Fatalf("Check limited to TestA: %v", got)
	}
	for _, bad := range []string{"fail TestX", "broken TestX # r", "fail TestX # r\nfail TestX # r"} {
		if _, err := ParseExpected(bad, "bad"); err == nil {
			t.Errorf("ParseExpected(%q) accepted it", bad)
		}
	}
}

// TestParseOutput: a subtest with no result line (the process panicked)
// counts as failed; results keep their order.
func TestParseOutput(t *testing.T) {
	out := `=== RUN   TestX
=== RUN   TestX/a
--- SKIP: TestX/a (0.00s)
=== RUN   TestX/b
panic: boom
`
	got := parseOutput(out, "TestX")
	want := []Result{
		{Name: "TestX", Status: Fail, Note: "no result: the suite panicked"},
		{Name: "TestX/a", Status: Skip},
		{Name: "TestX/b", Status: Fail, Note: "no result: the suite panicked"},
	}
	if len(got) != len(want) {
		t.Fatalf("parseOutput: %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("result %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
