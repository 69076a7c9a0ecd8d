package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"time"
)

// Profiles of the measured server (issue 16: "a CPU and allocation profile
// of the server per workload, top 15 functions"). With Config.ProfileDir
// set, every measured phase of the cairn target (the load and each run of
// each workload) is bracketed by calls to the server's profiling endpoints,
// and three files are written per phase:
//
//	cpu-<phase>-run<N>.pprof          the server's CPU profile of the phase
//	allocs-<phase>-run<N>-start.pprof its allocations profile as the phase began
//	allocs-<phase>-run<N>-end.pprof   and as it ended (go tool pprof
//	                                  -diff_base start end: the phase's own)
//
// The endpoints are ProfileHandler's, which only a profiling build serves
// (cairn built with -tags cairnpprof and CAIRN_PPROF naming an address);
// a release build has none, and asking for profiles from it is an error
// that says how to build one. The profile is the server process's own, so
// the harness and the driver are not in it. The fetches and the profiler
// run inside the measured phases: a profiled run's figures are for reading
// its profiles beside, not for BENCHMARKS.md's ratios.

// Profiling endpoints, under one prefix.
const (
	profilePrefix      = "/debug/cairn/"
	profileAllocsPath  = profilePrefix + "allocs"
	profileCPUStart    = profilePrefix + "cpu/start"
	profileCPUStopPath = profilePrefix + "cpu/stop"
)

// ProfileHandler serves a process's profiles for `cairn bench
// --profile-dir`: GET allocs (the allocations profile so far), POST
// cpu/start (begin a CPU profile; 409 if one runs) and POST cpu/stop (end
// it; the profile is the reply). It is mounted under /debug/cairn/ by
// profiling builds only.
func ProfileHandler() http.Handler {
	var (
		mu  sync.Mutex
		buf *bytes.Buffer // the CPU profile being written, nil when none
	)
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+profileAllocsPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		if err := pprof.Lookup("allocs").WriteTo(w, 0); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	mux.HandleFunc("POST "+profileCPUStart, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if buf != nil {
			http.Error(w, "a CPU profile is already running", http.StatusConflict)
			return
		}
		b := new(bytes.Buffer)
		if err := pprof.StartCPUProfile(b); err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		buf = b
	})
	mux.HandleFunc("POST "+profileCPUStopPath, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if buf == nil {
			http.Error(w, "no CPU profile is running", http.StatusConflict)
			return
		}
		pprof.StopCPUProfile()
		b := buf
		buf = nil
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(b.Bytes())
	})
	return mux
}

// profiler fetches the cairn target's profiles around each measured phase.
type profiler struct {
	base string // http://host:port of the server's ProfileHandler
	dir  string
	hc   *http.Client

	mu  sync.Mutex
	err error // the first failure; Run reports it
}

func newProfiler(base, dir string) *profiler {
	return &profiler{base: strings.TrimSuffix(base, "/"), dir: dir, hc: &http.Client{Timeout: time.Minute}}
}

// probe checks that the server serves profiles. A profiling build
// listens for them before it listens for clients (its init), so by the
// time a target is measured the endpoint answers or never will.
func (p *profiler) probe(ctx context.Context) error {
	if _, err := p.call(ctx, http.MethodGet, profileAllocsPath); err != nil {
		return fmt.Errorf("bench: --profile-dir: the server serves no profiles at %s (%v): "+
			"profile a cairn built with -tags cairnpprof, with CAIRN_PPROF naming --profile-url's address (make bench-profile does both)", p.base, err)
	}
	return nil
}

// call sends one request and returns the reply's body.
func (p *profiler) call(ctx context.Context, method, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, p.base+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// fetch writes the reply of one request to file name in the directory.
func (p *profiler) fetch(method, path, name string) error {
	body, err := p.call(context.Background(), method, path)
	if err == nil {
		err = os.WriteFile(filepath.Join(p.dir, name), body, 0o644)
	}
	return err
}

// phase begins the profiles of one phase; the function it returns ends them.
// A failure is kept for Run to report and never stops the measurement.
func (p *profiler) phase(workload string, run int) func() {
	stem := fmt.Sprintf("%s-run%d", workload, run+1)
	p.record(p.fetch(http.MethodGet, profileAllocsPath, "allocs-"+stem+"-start.pprof"))
	_, err := p.call(context.Background(), http.MethodPost, profileCPUStart)
	p.record(err)
	return func() {
		p.record(p.fetch(http.MethodPost, profileCPUStopPath, "cpu-"+stem+".pprof"))
		p.record(p.fetch(http.MethodGet, profileAllocsPath, "allocs-"+stem+"-end.pprof"))
	}
}

func (p *profiler) record(err error) {
	if err == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = fmt.Errorf("bench: profiling the server: %w", err)
	}
}

// failure is the first failure, if any.
func (p *profiler) failure() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// errNoProfileURL: --profile-dir against a --uri server needs its address.
var errNoProfileURL = errors.New("bench: --profile-dir with --uri needs --profile-url, the address the server serves its profiles at (CAIRN_PPROF of a cairn built with -tags cairnpprof)")
