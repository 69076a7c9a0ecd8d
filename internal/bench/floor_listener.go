package bench

import (
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// floorListener is what the protocol and proxy floors share: the
// listening socket, the connections open on it (closed by close), and
// the goroutines serving them (waited for by close).
type floorListener struct {
	ln     net.Listener
	connMu sync.Mutex
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// listen opens the listening socket on addr.
func (l *floorListener) listen(addr string) (err error) {
	l.ln, err = net.Listen("tcp", addr)
	l.conns = map[net.Conn]struct{}{}
	return err
}

func (l *floorListener) addr() string { return l.ln.Addr().String() }

// track adds c to the open connections (on) or removes it.
func (l *floorListener) track(c net.Conn, on bool) {
	l.connMu.Lock()
	if on {
		l.conns[c] = struct{}{}
	} else {
		delete(l.conns, c)
	}
	l.connMu.Unlock()
}

// close stops listening, closes every open connection and waits for
// their goroutines.
func (l *floorListener) close() {
	_ = l.ln.Close()
	l.connMu.Lock()
	for c := range l.conns {
		_ = c.Close()
	}
	l.connMu.Unlock()
	l.wg.Wait()
}

// untilSignal blocks until SIGINT or SIGTERM (a floor run as a child
// process is stopped so).
func untilSignal() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	<-sigs
}
