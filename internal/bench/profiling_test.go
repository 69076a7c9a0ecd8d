package bench

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gzipMagic opens every profile pprof writes (gzipped protocol buffers).
var gzipMagic = []byte{0x1f, 0x8b}

// checkProfiles asserts that dir holds the three profiles of each phase,
// each a gzipped profile.
func checkProfiles(t *testing.T, dir string, phases ...string) {
	t.Helper()
	for _, ph := range phases {
		for _, name := range []string{"cpu-" + ph + ".pprof", "allocs-" + ph + "-start.pprof", "allocs-" + ph + "-end.pprof"} {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Errorf("phase %s: %v", ph, err)
				continue
			}
			if !bytes.HasPrefix(b, gzipMagic) {
				t.Errorf("%s is not a profile: % x…", name, b[:min(len(b), 8)])
			}
		}
	}
}

// TestProfilerPhases drives ProfileHandler through the profiler as Run
// does: each phase's files written; a phase begun while another's CPU
// profile runs is a failure kept for Run, not a silent gap.
func TestProfilerPhases(t *testing.T) {
	srv := httptest.NewServer(ProfileHandler())
	defer srv.Close()
	for _, tc := range []struct {
		name    string
		steps   func(p *profiler)
		phases  []string
		failure string // "" when every call succeeds
	}{
		{"one phase", func(p *profiler) { p.phase("a", 0)() }, []string{"a-run1"}, ""},
		{"phases in turn", func(p *profiler) { p.phase("load", 0)(); p.phase("c", 0)(); p.phase("c", 1)() },
			[]string{"load-run1", "c-run1", "c-run2"}, ""},
		{"overlapping phases", func(p *profiler) { end := p.phase("a", 0); p.phase("b", 0); end() },
			[]string{"a-run1"}, "already running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := newProfiler(srv.URL+"/", dir)
			if err := p.probe(context.Background()); err != nil {
				t.Fatal(err)
			}
			tc.steps(p)
			checkProfiles(t, dir, tc.phases...)
			err := p.failure()
			switch {
			case tc.failure == "" && err != nil:
				t.Fatalf("failure %v", err)
			case tc.failure != "" && (err == nil || !strings.Contains(err.Error(), tc.failure)):
				t.Fatalf("failure %v, want one saying %q", err, tc.failure)
			}
			// Whatever happened, no CPU profile is left running.
			if _, err := p.call(context.Background(), "POST", profileCPUStopPath); err == nil {
				t.Fatal("a CPU profile was left running")
			}
		})
	}
}

// TestProfileDirEndToEnd: Run with ProfileDir against the embedded server
// (this test binary playing `cairn serve`). A profiling build of the test
// (-tags cairnpprof) serves the endpoints and every phase's profiles are
// written; any other build refuses with the error that says how to build
// one, before measuring anything.
func TestProfileDirEndToEnd(t *testing.T) {
	quickWindows(t)
	ws, err := ParseWorkloads([]string{"c"})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "profiles")
	_, err = Run(context.Background(), Config{
		Workloads: ws, Records: 100, Ops: 200, Threads: 2, Batch: 50, Runs: 1, Seed: 7,
		Self: testSelf, Version: "test", ProfileDir: dir,
	})
	if profilingBuild {
		if err != nil {
			t.Fatal(err)
		}
		checkProfiles(t, dir, "load-run1", "c-run1")
		return
	}
	if err == nil || !strings.Contains(err.Error(), "-tags cairnpprof") {
		t.Fatalf("Run against a server without profiles: %v, want the error naming -tags cairnpprof", err)
	}
}

// TestProfileFlagsValidated: the profiling options that cannot be honoured
// together are refused.
func TestProfileFlagsValidated(t *testing.T) {
	ws, _ := ParseWorkloads([]string{"c"})
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"url without dir", Config{URI: "mongodb://x", ProfileURL: "http://y"}, "without --profile-dir"},
		{"url without uri", Config{ProfileURL: "http://y", ProfileDir: "d"}, "embedded server's is chosen"},
		{"uri without url", Config{URI: "mongodb://x", ProfileDir: "d"}, "needs --profile-url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Workloads = ws
			_, err := Run(context.Background(), tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}
