package server

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairndb/cairn/internal/commands"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/repl"
	"github.com/cairndb/cairn/internal/tlsconn"
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
	// TLS, when its mode is not disabled, speaks TLS with the connections
	// that start a handshake (package tlsconn); nil: plain connections
	// only.
	TLS *tlsconn.Listener
	// Members, when set (a replica set member), takes the connections
	// other members open to this port: they begin with
	// repl.MemberStreamMagic, which no MongoDB message can (package
	// replset's doc) — inside TLS when the member dialled with it, and
	// only so under requireTLS; r holds the stream's bytes, none
	// consumed.
	Members func(c net.Conn, r *bufio.Reader)
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
// With Options.Members it first tells a member's connection from a
// client's by its first bytes.
func (s *Server) admit(nc net.Conn) {
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
		_ = tc.SetKeepAlive(true)
	}
	if s.opts.Members != nil {
		go s.sniff(nc)
		return
	}
	s.admitClient(nc, false)
}

// sniff hands a member's connection to Options.Members and admits any
// other as a client's. With TLS on, the handshake (or requireTLS's
// refusal) comes first, so a member's stream is told apart inside it.
func (s *Server) sniff(nc net.Conn) {
	if s.opts.TLS.On() {
		secured, err := s.opts.TLS.Accept(nc)
		if err != nil {
			s.log.Info("closing a new connection", "remote", nc.RemoteAddr().String(), "err", err)
			_ = nc.Close()
			return
		}
		nc = secured
	}
	br := bufio.NewReaderSize(nc, 16<<10)
	_ = nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	first, err := br.Peek(len(repl.MemberStreamMagic))
	_ = nc.SetReadDeadline(time.Time{})
	if err == nil && string(first) == repl.MemberStreamMagic {
		s.opts.Members(nc, br)
		return
	}
	if err != nil && len(first) == 0 {
		_ = nc.Close()
		return
	}
	s.admitClient(&peekedConn{Conn: nc, r: br}, true)
}

// peekedConn is a connection whose first bytes were read into r.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// admitClient serves nc as a client's connection; secured: its TLS
// handshake (or plain admission) happened already (sniff).
func (s *Server) admitClient(nc net.Conn, secured bool) {
	env := s.env
	if cur := env.Connections.Current.Load(); cur >= int64(s.opts.MaxConns) {
		env.Connections.Rejected.Add(1)
		s.log.Warn("connection refused because there are too many open connections",
			"reason", "connection limit reached (--max-conns)", "remote", nc.RemoteAddr().String(),
			"connectionCount", cur, "limit", s.opts.MaxConns, "rejected", env.Connections.Rejected.Load())
		_ = nc.Close()
		return
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
		if !secured && s.opts.TLS.On() {
			tc, err := s.opts.TLS.Accept(nc)
			if err != nil {
				s.log.Info("closing a new connection", "remote", nc.RemoteAddr().String(), "err", err)
				_ = nc.Close()
				return
			}
			nc = tc
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
