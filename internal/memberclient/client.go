package memberclient

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/xdg-go/scram"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/tlsconn"
	"github.com/cairndb/cairn/internal/wire"
)

// Options configure a Client.
type Options struct {
	// Key is the cluster's keyFile key (auth.ReadKeyFile); nil runs
	// without authentication.
	Key []byte
	// TLS, when set, makes every connection a TLS client's with this
	// configuration (tlsconn.Member: the process's certificate, the peer's
	// checked against the CA file); the server name is the member's host.
	TLS *tls.Config
	// DialTimeout bounds connecting to a member (default 5s).
	DialTimeout time.Duration
	// MaxIdle is the most idle connections kept per member (default 64).
	MaxIdle int
	// Timeout bounds a round trip whose context has no deadline (0: no
	// bound), so a member that stops answering does not hold a caller
	// forever.
	Timeout time.Duration
}

// Client runs commands on cluster members, keeping a pool of idle
// connections per member address. It is safe for concurrent use.
type Client struct {
	opts  Options
	mu    sync.Mutex
	hosts map[string]*Host
	// scram is the SCRAM client of __system with the key (nil without
	// one): one for every connection, so it derives the salted password
	// once per salt rather than once per connection.
	scram *scram.Client
	err   error // from making scram
}

// New returns a client; it connects to nobody until a command needs to.
func New(opts Options) *Client {
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 5 * time.Second
	}
	if opts.MaxIdle <= 0 {
		opts.MaxIdle = 64
	}
	c := &Client{opts: opts, hosts: map[string]*Host{}}
	if opts.Key != nil {
		c.scram, c.err = scram.SHA256.NewClient(systemUser, string(opts.Key), "")
	}
	return c
}

// Host is one member address and its pool.
func (c *Client) Host(addr string) *Host {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.hosts[addr]
	if !ok {
		h = &Host{c: c, addr: addr}
		c.hosts[addr] = h
	}
	return h
}

// Run sends cmd (which names its $db) to the member at addr and returns
// its reply, ok: 0 included.
func (c *Client) Run(ctx context.Context, addr string, cmd bsoncore.Document) (bsoncore.Document, error) {
	return c.Host(addr).RunSeq(ctx, cmd, nil)
}

// Close drops every idle connection. The client stays usable.
func (c *Client) Close() {
	c.mu.Lock()
	hosts := make([]*Host, 0, len(c.hosts))
	for _, h := range c.hosts {
		hosts = append(hosts, h)
	}
	c.mu.Unlock()
	for _, h := range hosts {
		h.Close()
	}
}

// Sequence is an OP_MSG document sequence (kind 1 section) sent with a
// command: a write's documents, which together may exceed the 16 MB a
// command body may hold.
type Sequence struct {
	ID   string
	Docs []bsoncore.Document
}

// Host is one member: its address and its idle connections.
type Host struct {
	c    *Client
	addr string
	mu   sync.Mutex
	idle []*conn
}

// Addr is the member's host:port.
func (h *Host) Addr() string { return h.addr }

// Run sends cmd to the member and returns its reply, ok: 0 included.
func (h *Host) Run(ctx context.Context, cmd bsoncore.Document) (bsoncore.Document, error) {
	return h.RunSeq(ctx, cmd, nil)
}

// RunSeq is Run with a document sequence (nil: none).
func (h *Host) RunSeq(ctx context.Context, cmd bsoncore.Document, seq *Sequence) (bsoncore.Document, error) {
	cn, err := h.get(ctx)
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok && h.c.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.c.opts.Timeout)
		defer cancel()
	}
	reply, err := cn.roundTrip(ctx, cmd, seq)
	if err != nil {
		cn.nc.Close() // "Broken connections are not reused"
		return nil, &NetError{Host: h.addr, Op: "running " + commandName(cmd), Err: err}
	}
	h.put(cn)
	return reply, nil
}

// Close drops the idle connections.
func (h *Host) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, cn := range h.idle {
		cn.nc.Close()
	}
	h.idle = nil
}

func (h *Host) get(ctx context.Context) (*conn, error) {
	h.mu.Lock()
	if n := len(h.idle); n > 0 {
		cn := h.idle[n-1]
		h.idle = h.idle[:n-1]
		h.mu.Unlock()
		return cn, nil
	}
	h.mu.Unlock()
	d := net.Dialer{Timeout: h.c.opts.DialTimeout}
	nc, err := d.DialContext(ctx, "tcp", h.addr)
	if err != nil {
		return nil, &NetError{Host: h.addr, Op: "connecting", Err: err}
	}
	if cfg := h.c.opts.TLS; cfg != nil {
		if nc, err = tlsconn.Dial(ctx, nc, cfg, h.addr); err != nil {
			return nil, &NetError{Host: h.addr, Op: "connecting", Err: err}
		}
	}
	cn := &conn{nc: nc, r: wire.NewReader(nc, 0), w: bufio.NewWriter(nc)}
	if h.c.opts.Key != nil {
		err := h.c.err
		if err == nil {
			err = cn.authenticate(ctx, h.c.scram)
		}
		if err != nil {
			nc.Close() // "Authenticated before use"
			return nil, fmt.Errorf("memberclient: authenticating to %s as %s@%s: %w", h.addr, systemUser, systemDB, err)
		}
	}
	return cn, nil
}

func (h *Host) put(cn *conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.idle) < h.c.opts.MaxIdle {
		h.idle = append(h.idle, cn)
		return
	}
	cn.nc.Close()
}

// conn is one connection to a member: a command at a time.
type conn struct {
	nc    net.Conn
	r     *wire.Reader
	w     *bufio.Writer
	frame []byte
	id    int32
}

// roundTrip sends cmd and seq (when given) and returns a copy of the
// reply. It ends when ctx does ("Cancelled round trips end"): the
// context's deadline is the connection's, and its cancellation moves that
// deadline to the past, which fails a blocked write or read at once. A
// round trip its context ended is an error wrapping the context's, even
// if the reply arrived meanwhile: the caller gave up on it, and the
// connection, whose deadline the cancellation may still be moving, is
// never pooled (every caller closes a connection whose round trip failed).
func (c *conn) roundTrip(ctx context.Context, cmd bsoncore.Document, seq *Sequence) (bsoncore.Document, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = c.nc.SetDeadline(dl)
	} else {
		_ = c.nc.SetDeadline(time.Time{})
	}
	stop := context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(time.Unix(1, 0)) })
	reply, err := c.exchange(cmd, seq)
	if !stop() || ctx.Err() != nil {
		if err == nil {
			err = ctx.Err()
		} else if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok && errors.Is(err, os.ErrDeadlineExceeded) && !time.Now().Before(dl) {
		// The connection's deadline is the context's, and its timer may
		// fire before the context's own.
		err = fmt.Errorf("%w (%v)", context.DeadlineExceeded, err)
	}
	return reply, err
}

// exchange writes one command and reads its reply.
func (c *conn) exchange(cmd bsoncore.Document, seq *Sequence) (bsoncore.Document, error) {
	c.id++
	start, frame := wire.BeginMsg(c.frame[:0], c.id, 0, 0)
	frame = wire.AppendBodySection(frame, cmd)
	if seq != nil {
		frame = wire.AppendSequenceSection(frame, seq.ID, seq.Docs)
	}
	c.frame = wire.EndMsg(frame, start)
	if _, err := c.w.Write(c.frame); err != nil {
		return nil, err
	}
	if err := c.w.Flush(); err != nil {
		return nil, err
	}
	msg, err := c.r.ReadMessage()
	if err != nil {
		return nil, err
	}
	if msg.Header.OpCode != wire.OpMsg {
		return nil, fmt.Errorf("a reply of opcode %v", msg.Header.OpCode)
	}
	return append(bsoncore.Document(nil), msg.Msg.Body...), nil
}

// commandName is cmd's first key, for messages.
func commandName(cmd bsoncore.Document) string {
	if el, err := cmd.IndexErr(0); err == nil {
		return el.Key()
	}
	return "a command"
}
