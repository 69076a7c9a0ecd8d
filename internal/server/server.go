package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairndb/cairn/internal/commands"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/wire"
)

// DefaultMaxConns bounds concurrent client connections (mongod's
// net.maxIncomingConnections); more are accepted and closed at once with no
// reply, as mongod does, each logged with its reason and counted in
// serverStatus.connections.rejected.
const DefaultMaxConns = 10_000

// Options configure a Server.
type Options struct {
	// MaxConns is the connection limit (default DefaultMaxConns).
	MaxConns int
	// Compressors are offered to clients, in preference order. Default:
	// snappy, zstd, zlib, as mongod.
	Compressors []wire.Compressor
	// Logger receives connection events. Default: the Env's logger.
	Logger *slog.Logger
	// TLS, when its mode is not disabled, speaks TLS with the clients
	// that start a handshake (tls.go); nil: plain connections only.
	TLS *TLSOptions
}

// Server serves MongoDB clients over TCP.
type Server struct {
	env  *commands.Env
	opts Options
	log  *slog.Logger

	// lns are the listeners, one per Listen (mongod's --bind_ip list).
	lns     []net.Listener
	nextID  atomic.Int64
	active  sync.WaitGroup
	mu      sync.Mutex
	conns   map[*conn]struct{}
	closing atomic.Bool
	// done is closed by Shutdown; connections waiting (an awaitable hello)
	// watch it so they end promptly.
	done     chan struct{}
	doneOnce sync.Once
	// looks parks the look loop of watch.go while no command runs.
	looks lookParking
}

// New prepares a server for env.
func New(env *commands.Env, opts Options) *Server {
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	if opts.Compressors == nil {
		opts.Compressors = []wire.Compressor{wire.CompressorSnappy, wire.CompressorZstd, wire.CompressorZlib}
	}
	if opts.Logger == nil {
		opts.Logger = env.Log
	}
	names := make([]string, len(opts.Compressors))
	for i, c := range opts.Compressors {
		names[i] = c.String()
	}
	env.Config.Compressors = names
	env.Connections.Available.Store(int64(opts.MaxConns))
	return &Server{env: env, opts: opts, log: opts.Logger, conns: map[*conn]struct{}{}, done: make(chan struct{}), looks: lookParking{wake: make(chan struct{}, 1)}}
}

// Listen binds addr ("127.0.0.1:27017"; port 0 picks a free one). Each
// call adds an address the server accepts connections on (a --bind_ip
// list); call it before Serve.
func (s *Server) Listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	s.lns = append(s.lns, ln)
	return nil
}

// Addr is the first bound address (after Listen).
func (s *Server) Addr() net.Addr { return s.lns[0].Addr() }

// Addrs are every bound address, in the order of Listen.
func (s *Server) Addrs() []net.Addr {
	out := make([]net.Addr, len(s.lns))
	for i, ln := range s.lns {
		out[i] = ln.Addr()
	}
	return out
}

// Serve accepts connections on every listener until Shutdown; it returns
// nil after a shutdown, or the first listener's failure (another
// listener's is logged, and the others go on).
func (s *Server) Serve() error {
	go s.lookLoop() // watch.go
	for _, ln := range s.lns[1:] {
		go func() {
			if err := s.accept(ln); err != nil {
				s.log.Error("accepting connections failed", "listen", ln.Addr().String(), "err", err)
			}
		}()
	}
	return s.accept(s.lns[0])
}

// accept serves ln's connections until Shutdown.
func (s *Server) accept(ln net.Listener) error {
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, errTooManyFiles) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed; retrying", "err", err, "in", backoff)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		s.admit(nc)
	}
}

// admit starts serving nc, or closes it when the server is at its limit.
func (s *Server) admit(nc net.Conn) {
	env := s.env
	if cur := env.Connections.Current.Load(); cur >= int64(s.opts.MaxConns) {
		env.Connections.Rejected.Add(1)
		s.log.Warn("connection refused because there are too many open connections",
			"reason", "connection limit reached (--max-conns)", "remote", nc.RemoteAddr().String(),
			"connectionCount", cur, "limit", s.opts.MaxConns, "rejected", env.Connections.Rejected.Load())
		_ = nc.Close()
		return
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
		_ = tc.SetKeepAlive(true)
	}
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		_ = nc.Close()
		return
	}
	s.active.Add(1)
	s.mu.Unlock()
	env.Connections.Current.Add(1)
	env.Connections.Available.Add(-1)
	env.Connections.TotalCreated.Add(1)
	id := s.nextID.Add(1)
	go func() {
		defer s.active.Done()
		defer func() {
			env.Connections.Current.Add(-1)
			env.Connections.Available.Add(1)
		}()
		if s.opts.TLS != nil && s.opts.TLS.Mode != TLSDisabled {
			secured, err := s.secure(nc)
			if err != nil {
				s.log.Info("closing a new connection", "remote", nc.RemoteAddr().String(), "err", err)
				_ = nc.Close()
				return
			}
			nc = secured
		}
		c := newConn(s, nc, id)
		s.mu.Lock()
		if s.closing.Load() {
			s.mu.Unlock()
			_ = nc.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
		c.serve()
	}()
}

// errShuttingDown interrupts the operations still running when a shutdown's
// time is up.
var errShuttingDown = mongoerr.New(mongoerr.InterruptedAtShutdown, "interrupted at shutdown")

// Shutdown stops accepting, lets requests in flight finish until ctx ends,
// then interrupts the operations still running and closes every
// connection. An already-ended ctx (a forced shutdown) interrupts at once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closing.Store(true)
	s.doneOnce.Do(func() { close(s.done) })
	for _, ln := range s.lns {
		_ = ln.Close()
	}
	s.mu.Lock()
	for c := range s.conns {
		c.closeWhenIdle()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.active.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.conns {
			c.sess.Interrupt(errShuttingDown)
			_ = c.nc.Close()
		}
		s.mu.Unlock()
		<-done
		return ctx.Err()
	}
}
