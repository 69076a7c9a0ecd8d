package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
)

// Fresh loads (invariant "Every load into a fresh store",
// TestLoadRunsFresh): with --runs N every target the harness started is
// loaded N times, each load into a store nothing has been written to — the
// child server restarted on a new data directory (the protocol floor
// restarted: a new map; the durable floor's log in a new directory), the
// in-process Pebble floors closed and opened on a new directory. A load
// after a drop is not a fresh load: the Pebble floors would rewrite the
// same keys over their range deletion while Cairn loads a new collection's
// keys (BENCHMARKS.md, lsm19's reverted attempt). The harness checks the
// property before every load (checkFresh) and fails the load, never
// measures it, when it does not hold.
//
// Targets the harness cannot renew (a --uri or --compare server, the proxy
// floor, whose records live in the cairn target's server) are dropped and
// loaded once, after every renewable target's last load (so that renewing
// cairn cannot take the proxy floor's records with it); their load figure
// is that one load.

// childServer is a server child process the harness can restart on a new
// store: same arguments, environment and address (so a proxy in front of
// it and a profiler pointed at it keep working), a new data directory.
type childServer struct {
	what       string
	self       SelfCommand
	args       func(dir string) []string
	env        []string
	addr       string
	dirPattern string // the data directory's os.MkdirTemp pattern; "" for none
	c          *child
	dir        string
}

func (s *childServer) start(ctx context.Context) error {
	s.dir = ""
	if s.dirPattern != "" {
		dir, err := os.MkdirTemp("", s.dirPattern)
		if err != nil {
			return err
		}
		s.dir = dir
	}
	c, err := startChild(ctx, s.what, s.self, s.args(s.dir), s.env, s.addr)
	if err != nil {
		if s.dir != "" {
			_ = os.RemoveAll(s.dir)
		}
		return err
	}
	s.c = c
	return nil
}

// stop stops the child and removes its data directory.
func (s *childServer) stop() error {
	var err error
	if s.c != nil {
		err = s.c.stop()
		s.c = nil
	}
	if s.dir != "" {
		err = errors.Join(err, os.RemoveAll(s.dir))
		s.dir = ""
	}
	return err
}

// own makes t the started child's target: its pid and directory, its stop
// and its renew.
func (s *childServer) own(t *target) {
	t.pid, t.dir = s.c.cmd.Process.Pid, s.dir
	t.stop = []func() error{s.stop}
	t.renew = func(ctx context.Context) error {
		if err := s.stop(); err != nil {
			return err
		}
		if err := s.start(ctx); err != nil {
			return err
		}
		t.pid, t.dir = s.c.cmd.Process.Pid, s.dir
		return nil
	}
}

// renewPebbleFloor makes t's store a new Pebble floor in a new directory,
// opened as the one it replaces was.
func renewPebbleFloor(t *target) func(context.Context) error {
	return func(ctx context.Context) error {
		old := t.pebble
		if err := old.close(ctx); err != nil {
			return err
		}
		pf, err := openPebbleFloor(old.durable, old.oplog)
		if err != nil {
			return err
		}
		t.db, t.pebble, t.dir = pf, pf, pf.dir
		return nil
	}
}

// freshStore makes t's store fresh for a load when it can: a store that a
// load has reached is renewed. It reports whether the store is fresh; a
// target that cannot be renewed is not (its load drops the collection
// first).
func (r *runner) freshStore(ctx context.Context, t *target) (bool, error) {
	if t.renew == nil {
		return false, nil
	}
	if t.loaded {
		if err := t.renew(ctx); err != nil {
			return false, fmt.Errorf("renewing the store: %w", err)
		}
		t.loaded = false
	}
	return true, t.checkFresh()
}

// checkFresh reports why t's store is not one nothing has been written to:
// an in-process floor that has taken a write, or a server process that a
// load has reached.
func (t *target) checkFresh() error {
	if t.pebble != nil {
		if t.pebble.written.Load() {
			return fmt.Errorf("invariant \"Every load into a fresh store\": %s's Pebble in %s has been written to", t.name, t.pebble.dir)
		}
		return nil
	}
	if t.pid <= 0 || slices.Contains(t.loadedPIDs, t.pid) {
		return fmt.Errorf("invariant \"Every load into a fresh store\": %s's server (pid %d) has been loaded before", t.name, t.pid)
	}
	return nil
}

// loads loads every target, --runs times for those whose store can be
// renewed: run i goes through them starting at the i-th (rotated, so that
// no target always goes first), then the other targets load once. Each
// target's result is the median of its runs (medianLoad); a target whose
// load failed is not loaded again.
func (r *runner) loads(ctx context.Context) []LoadResult {
	var renewable, once []*target
	for _, t := range r.targets {
		if t.renew != nil {
			renewable = append(renewable, t)
		} else {
			once = append(once, t)
		}
	}
	runs := map[*target][]LoadResult{}
	for run := range r.cfg.Runs {
		n := len(renewable)
		for i := range n {
			t := renewable[(run+i)%n]
			if prev := runs[t]; len(prev) > 0 && prev[len(prev)-1].Failed != "" {
				continue
			}
			runs[t] = append(runs[t], r.load(ctx, t, run))
			if ctx.Err() != nil {
				return nil
			}
		}
	}
	for _, t := range once {
		runs[t] = append(runs[t], r.load(ctx, t, 0))
		if ctx.Err() != nil {
			return nil
		}
	}
	out := make([]LoadResult, 0, len(r.targets))
	for _, t := range r.targets {
		out = append(out, medianLoad(runs[t]))
	}
	return out
}
