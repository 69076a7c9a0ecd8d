// Package periodic runs a background pass every period: the loop of the
// TTL monitor (package ttl) and of the versioned collections' retention
// monitor (package history).
//
// Invariant "Stops promptly": each sleep lasts at most a second, so Stop
// returns within a second plus the pass in progress, and a changed period
// takes effect within a second.
package periodic

import "time"

// maxWait bounds each sleep ("Stops promptly").
const maxWait = time.Second

// Loop is a running background loop.
type Loop struct {
	stop chan struct{}
	done chan struct{}
}

// Start runs pass every period() (read before every sleep; a non-positive
// value means def) until Stop. active, when set, is asked before each
// pass; false skips it (a replica set member that is not primary: only the
// primary's background writes replicate).
func Start(period func() time.Duration, def time.Duration, active func() bool, pass func()) *Loop {
	l := &Loop{stop: make(chan struct{}), done: make(chan struct{})}
	every := func() time.Duration {
		if period != nil {
			if p := period(); p > 0 {
				return p
			}
		}
		return def
	}
	go func() {
		defer close(l.done)
		last := time.Now()
		for {
			t := time.NewTimer(max(min(time.Until(last.Add(every())), maxWait), 0))
			select {
			case <-l.stop:
				t.Stop()
				return
			case <-t.C:
			}
			if time.Since(last) < every() {
				continue
			}
			last = time.Now()
			if active == nil || active() {
				pass()
			}
		}
	}()
	return l
}

// Stop ends the loop, waiting for a pass in progress. Stopping twice, or
// a nil Loop, is harmless.
func (l *Loop) Stop() {
	if l == nil {
		return
	}
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	<-l.done
}
