package server

import (
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairndb/cairn/internal/opctx"
)

// A client that closes its connection while its command runs cancels the
// command (MongoDB's ClientDisconnect): the connection's context, from
// which every operation's derives, is cancelled with opctx.ErrClientGone.
//
// Seeing the close needs a read of the socket while the serving goroutine
// is busy running the command. A read, a timer or even a lock per command
// would cost the hot path (a ping or a point read takes a few
// microseconds), so a command only bumps a counter: one goroutine per
// server looks at every busy connection each watchAfter, and a connection
// still on the same command as at the previous look gets one read in
// another goroutine, which the end of the command stops with a past read
// deadline. Bytes that read returns belong to the client's next message;
// the connection's reader is given them first (watchedReader).
//
// An idle server does not tick: once its looks have found no command left
// to watch for parkAfter (none runs, or every one is watched already, as a
// driver's awaitable hello is), the loop parks until a command begins. begin reads
// one shared flag to know (an atomic load, no write, while the loop runs);
// only the command that finds the loop parked wakes it.
//
// A command in a short wait of its own is not watched meanwhile: a change
// stream's getMore that waits out its pace (at most commands' maxPace,
// 10 ms, ended by a timer whatever the client does) tells the connection
// through its session (commands.Session.ShortWait), and when the wait ends
// it counts as begun again, so that what it does next is watched, as any
// command, once it has run between one and two watchAfter. Ten open
// streams under a steady flow make a paced getMore every millisecond or
// so, most of them waiting about the ceiling (9 ms), so many spanned two
// looks and were watched (strace: a watch read per three getMores): a
// goroutine, a read, three deadline changes and two more wake-ups each,
// about 2 % of the server's samples in the bench (BENCHMARKS.md,
// "Ten open change streams, session 13").
// A client gone during the pace is seen when it ends (within maxPace), by
// the watch of what follows, or by the reply's write.

// watchAfter is how often busy connections are looked at: a command is
// watched once it has run between one and two of these. A disconnect is
// then seen within that time plus the operation's next check of its
// context.
const watchAfter = 5 * time.Millisecond

// parkAfter is how long the look loop keeps ticking with no command to
// watch before it parks.
const parkAfter = 100 * time.Millisecond

// lookParking is the look loop's parking place, one per server.
type lookParking struct {
	parked atomic.Bool
	wake   chan struct{} // buffered 1: one token per park at most
}

// unpark wakes the loop if it is parked; called by every command's begin.
func (p *lookParking) unpark() {
	if p.parked.Load() && p.parked.CompareAndSwap(true, false) {
		p.wake <- struct{}{} // the CAS admits one sender per park
	}
}

// watcher watches one connection's socket while a long command runs.
type watcher struct {
	c *conn

	running atomic.Bool   // a command is being served
	waiting atomic.Bool   // the command is in a short wait (shortWait)
	seq     atomic.Uint64 // commands begun
	seen    uint64        // seq at the previous look (the look loop's own)
	started uint64        // seq of the command last watched (the look loop's own)

	mu     sync.Mutex
	active bool          // the watch read is in progress
	done   chan struct{} // closed when the watch read returns
	// peeked holds bytes the watch read took from the socket, for the
	// reader; only the watch goroutine writes it, and only while active.
	peeked []byte
}

func newWatcher(c *conn) *watcher { return &watcher{c: c} }

// begin marks a command as started.
func (w *watcher) begin() {
	w.seq.Add(1)
	w.running.Store(true)
	w.c.srv.looks.unpark()
}

// shortWait marks the command as in a short wait of its own (waiting) or
// out of it: it is not watched while it waits, and counts as begun again
// after (commands.Session.ShortWait).
func (w *watcher) shortWait(waiting bool) {
	if waiting {
		w.waiting.Store(true)
		return
	}
	w.seq.Add(1) // its watchAfter starts again
	w.waiting.Store(false)
	w.c.srv.looks.unpark()
}

// end marks the command as finished and stops a watch read in progress.
func (w *watcher) end() {
	w.mu.Lock()
	w.running.Store(false)
	active, done := w.active, w.done
	w.mu.Unlock()
	if !active {
		return
	}
	_ = w.c.nc.SetReadDeadline(pastDeadline)
	<-done
	w.mu.Lock()
	w.active = false
	w.mu.Unlock()
	_ = w.c.nc.SetReadDeadline(time.Time{})
	if w.c.quit.Load() {
		_ = w.c.nc.SetReadDeadline(pastDeadline) // shutting down: keep the next read from blocking
	}
}

// look is the look loop's visit: it starts a watch read when the same
// command has been running since the previous visit. It reports whether
// the connection needs another visit: a command runs that is not watched
// yet.
func (w *watcher) look() (again bool) {
	if !w.running.Load() || w.waiting.Load() {
		return false // a wait's end wakes the loop (shortWait)
	}
	seq := w.seq.Load()
	if seq != w.seen {
		w.seen = seq
		return true
	}
	if w.started == seq {
		return false // watched already
	}
	w.started = seq
	go w.watch()
	return false
}

// lookLoop visits every connection each watchAfter until the server
// stops, parked while no command is left to watch.
func (s *Server) lookLoop() {
	t := time.NewTicker(watchAfter)
	defer t.Stop()
	idle := time.Duration(0)
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		if s.lookAll() {
			idle = 0
			continue
		}
		if idle += watchAfter; idle < parkAfter {
			continue
		}
		// Park. A command that began after the look above either is seen
		// by the look below or sees the flag and wakes the loop (both
		// sides write, then read, sequentially consistent atomics).
		s.looks.parked.Store(true)
		if s.lookAll() && s.looks.parked.CompareAndSwap(true, false) {
			idle = 0
			continue
		}
		t.Stop()
		select {
		case <-s.done:
			return
		case <-s.looks.wake:
		}
		idle = 0
		t.Reset(watchAfter)
	}
}

// lookAll looks at every connection and reports whether one needs another
// look.
func (s *Server) lookAll() bool {
	again := false
	s.mu.Lock()
	for c := range s.conns {
		if c.watch.look() {
			again = true
		}
	}
	s.mu.Unlock()
	return again
}

// watch reads the socket until the client sends something (more requests:
// it is alive), closes it (cancel the connection's operations), or end
// stops it.
func (w *watcher) watch() {
	w.mu.Lock()
	if !w.running.Load() || w.active {
		w.mu.Unlock()
		return
	}
	w.active = true
	w.done = make(chan struct{})
	done := w.done
	w.mu.Unlock()
	defer close(done)
	var buf [512]byte
	n, err := w.c.nc.Read(buf[:])
	if n > 0 {
		w.peeked = append(w.peeked, buf[:n]...)
		return
	}
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) && !isTimeout(err) {
		w.c.cancel(opctx.ErrClientGone)
		w.c.sess.Interrupt(opctx.ErrClientGone)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// watchedReader is what the connection's message reader reads: the bytes a
// watch read took first, then the socket.
type watchedReader struct{ w *watcher }

func (r watchedReader) Read(p []byte) (int, error) {
	w := r.w
	if len(w.peeked) > 0 {
		n := copy(p, w.peeked)
		w.peeked = w.peeked[n:]
		if len(w.peeked) == 0 {
			w.peeked = nil
		}
		return n, nil
	}
	return w.c.nc.Read(p)
}
