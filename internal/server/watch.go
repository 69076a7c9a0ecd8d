package server

import (
	"errors"
	"net"
	"os"
	"sync"
	"time"

	"github.com/cairndb/cairn/internal/opctx"
)

// A client that closes its connection while its command runs cancels the
// command (MongoDB's ClientDisconnect): the connection's context, from
// which every operation's derives, is cancelled with opctx.ErrClientGone.
//
// Seeing the close needs a read of the socket while the serving goroutine
// is busy running the command. A read per command would cost the hot path
// (a ping or a point read takes a few microseconds), so the socket is
// watched only once a command has run for watchAfter: a timer starts one
// read in another goroutine, and the end of the command stops it with a
// past read deadline. Bytes that read returns belong to the client's next
// message; the connection's reader is given them first (watchedReader).

// watchAfter is how long a command runs before its connection is watched.
// A disconnect is then seen within about this much time plus the
// operation's next check of its context.
const watchAfter = 5 * time.Millisecond

// watcher watches one connection's socket while a long command runs.
type watcher struct {
	c     *conn
	timer *time.Timer

	mu      sync.Mutex
	running bool          // a command is being served
	active  bool          // the watch read is in progress
	done    chan struct{} // closed when the watch read returns
	// peeked holds bytes the watch read took from the socket, for the
	// reader; only the watch goroutine writes it, and only while active.
	peeked []byte
}

func newWatcher(c *conn) *watcher {
	w := &watcher{c: c}
	w.timer = time.AfterFunc(time.Hour, w.watch)
	w.timer.Stop()
	return w
}

// begin marks a command as started: the socket is watched if it runs long.
func (w *watcher) begin() {
	w.mu.Lock()
	w.running = true
	w.mu.Unlock()
	w.timer.Reset(watchAfter)
}

// end marks the command as finished and stops a watch read in progress.
func (w *watcher) end() {
	w.timer.Stop()
	w.mu.Lock()
	w.running = false
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

// watch reads the socket until the client sends something (more requests:
// it is alive), closes it (cancel the connection's operations), or end
// stops it.
func (w *watcher) watch() {
	w.mu.Lock()
	if !w.running || w.active {
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
