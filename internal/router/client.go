package router

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/wire"
)

// conn is one client connection from the router to a member: a command at
// a time (OP_MSG, no compression).
type conn struct {
	nc    net.Conn
	r     *wire.Reader
	w     *bufio.Writer
	frame []byte
	id    int32
}

var dialTimeout = 5 * time.Second

func dial(ctx context.Context, host string) (*conn, error) {
	d := net.Dialer{Timeout: dialTimeout}
	nc, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, err
	}
	return &conn{nc: nc, r: wire.NewReader(nc, 0), w: bufio.NewWriter(nc)}, nil
}

// sequence is an OP_MSG document sequence (kind 1 section) sent with a
// command: a write's documents, which together may exceed the 16 MB a
// command body may hold.
type sequence struct {
	id   string
	docs []bsoncore.Document
}

// roundTrip sends cmd (which carries $db) and seq when given, and returns
// a copy of the reply.
func (c *conn) roundTrip(ctx context.Context, cmd bsoncore.Document, seq *sequence) (bsoncore.Document, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = c.nc.SetDeadline(dl)
	} else {
		_ = c.nc.SetDeadline(time.Time{})
	}
	c.id++
	start, frame := wire.BeginMsg(c.frame[:0], c.id, 0, 0)
	frame = wire.AppendBodySection(frame, cmd)
	if seq != nil {
		frame = wire.AppendSequenceSection(frame, seq.id, seq.docs)
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
		return nil, fmt.Errorf("router: reply of opcode %v", msg.Header.OpCode)
	}
	return append(bsoncore.Document(nil), msg.Msg.Body...), nil
}

// host is a pool of idle connections to one member.
type host struct {
	addr string
	mu   sync.Mutex
	idle []*conn
}

func (h *host) get(ctx context.Context) (*conn, error) {
	h.mu.Lock()
	if n := len(h.idle); n > 0 {
		c := h.idle[n-1]
		h.idle = h.idle[:n-1]
		h.mu.Unlock()
		return c, nil
	}
	h.mu.Unlock()
	return dial(ctx, h.addr)
}

func (h *host) put(c *conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.idle) < 64 {
		h.idle = append(h.idle, c)
		return
	}
	c.nc.Close()
}

func (h *host) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.idle {
		c.nc.Close()
	}
	h.idle = nil
}

// run sends cmd to this host and returns its reply, ok: 0 included.
func (h *host) run(ctx context.Context, cmd bsoncore.Document) (bsoncore.Document, error) {
	return h.runSeq(ctx, cmd, nil)
}

func (h *host) runSeq(ctx context.Context, cmd bsoncore.Document, seq *sequence) (bsoncore.Document, error) {
	c, err := h.get(ctx)
	if err != nil {
		return nil, err
	}
	reply, err := c.roundTrip(ctx, cmd, seq)
	if err != nil {
		c.nc.Close()
		return nil, err
	}
	h.put(c)
	return reply, nil
}

// Set is a replica set seen from the router: its seed hosts and the
// primary it last found. Commands go to the primary (the router reads and
// writes with primary read preference).
type Set struct {
	Name    string
	mu      sync.Mutex
	hosts   map[string]*host
	order   []string
	primary atomic.Pointer[host]
}

// ParseConnString reads "<set>/<host:port>,<host:port>" (the --configdb and
// addShard forms) or a bare host list.
func ParseConnString(s string) (name string, hosts []string, err error) {
	if uri, ok := strings.CutPrefix(s, "mongodb://"); ok {
		if i := strings.IndexByte(uri, '?'); i >= 0 {
			uri = uri[:i]
		}
		s = strings.TrimSuffix(uri, "/")
	}
	if i := strings.IndexByte(s, '/'); i >= 0 {
		name, s = s[:i], s[i+1:]
	}
	for _, h := range strings.Split(s, ",") {
		if h = strings.TrimSpace(h); h == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(h, "27017")
		}
		hosts = append(hosts, h)
	}
	if len(hosts) == 0 {
		return "", nil, mongoerr.New(mongoerr.FailedToParse, "connection string %q names no host", s)
	}
	return name, hosts, nil
}

// NewSet returns the set named name with seed hosts.
func NewSet(name string, hosts []string) *Set {
	s := &Set{Name: name, hosts: map[string]*host{}}
	for _, h := range hosts {
		s.add(h)
	}
	return s
}

func (s *Set) add(addr string) *host {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h, ok := s.hosts[addr]; ok {
		return h
	}
	h := &host{addr: addr}
	s.hosts[addr] = h
	s.order = append(s.order, addr)
	return h
}

// ConnString is the set's "<name>/<hosts>" form.
func (s *Set) ConnString() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Name == "" {
		return strings.Join(s.order, ",")
	}
	return s.Name + "/" + strings.Join(s.order, ",")
}

// Close drops the idle connections.
func (s *Set) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.hosts {
		h.close()
	}
}

var helloCmd = bsoncore.NewDocumentBuilder().AppendInt32("hello", 1).AppendString("$db", "admin").Build()

// findPrimary asks every host for hello until one says it is the writable
// primary (or names the primary), for up to wait.
func (s *Set) findPrimary(ctx context.Context, wait time.Duration) (*host, error) {
	deadline := time.Now().Add(wait)
	var last error
	for {
		s.mu.Lock()
		hosts := make([]*host, 0, len(s.order))
		for _, a := range s.order {
			hosts = append(hosts, s.hosts[a])
		}
		s.mu.Unlock()
		for _, h := range hosts {
			hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			reply, err := h.run(hctx, helloCmd)
			cancel()
			if err != nil {
				last = err
				continue
			}
			if w, _ := reply.Lookup("isWritablePrimary").BooleanOK(); w {
				s.primary.Store(h)
				return h, nil
			}
			if _, ok := reply.Lookup("setName").StringValueOK(); !ok {
				if s.Name == "" { // a standalone: it is its own primary
					s.primary.Store(h)
					return h, nil
				}
			}
			if p, ok := reply.Lookup("primary").StringValueOK(); ok {
				ph := s.add(p)
				if ph != h {
					continue
				}
			}
			last = fmt.Errorf("%s is not primary", h.addr)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, mongoerr.New(mongoerr.FailedToSatisfyReadPreference, "could not find a primary of %s: %v", s.ConnString(), last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// notPrimary codes send the router to look for the primary again.
func notPrimary(code int32) bool {
	switch code {
	case 10107, 13435, 11600, 11602, 189, 91:
		return true
	}
	return false
}

// Run sends cmd to the set's primary and returns the reply (ok: 0
// included, as the member sent it). A network error or a not-primary
// answer makes it look for the primary again and retry once.
func (s *Set) Run(ctx context.Context, cmd bsoncore.Document) (bsoncore.Document, error) {
	return s.RunSeq(ctx, cmd, nil)
}

// RunSeq is Run with a document sequence (nil: none).
func (s *Set) RunSeq(ctx context.Context, cmd bsoncore.Document, seq *sequence) (bsoncore.Document, error) {
	for attempt := 0; ; attempt++ {
		h := s.primary.Load()
		if h == nil {
			var err error
			if h, err = s.findPrimary(ctx, 10*time.Second); err != nil {
				return nil, err
			}
		}
		reply, err := h.runSeq(ctx, cmd, seq)
		if err == nil {
			code, _ := reply.Lookup("code").AsInt32OK()
			if ok, _ := reply.Lookup("ok").AsFloat64OK(); ok == 1 || !notPrimary(code) {
				return reply, nil
			}
		}
		s.primary.CompareAndSwap(h, nil)
		if attempt >= 1 {
			if err == nil {
				return reply, nil
			}
			return nil, mongoerr.New(mongoerr.HostUnreachable, "%s: %v", s.ConnString(), err)
		}
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
	}
}

// replyError is a member's ok: 0 reply as an error the router passes on
// unchanged.
type replyError struct {
	reply bsoncore.Document
}

func (e *replyError) Error() string {
	msg, _ := e.reply.Lookup("errmsg").StringValueOK()
	return fmt.Sprintf("%s (code %d)", msg, e.code())
}

func (e *replyError) code() int32 {
	c, _ := e.reply.Lookup("code").AsInt32OK()
	return c
}

// checkReply turns an ok: 0 reply into a *replyError.
func checkReply(reply bsoncore.Document, err error) (bsoncore.Document, error) {
	if err != nil {
		return nil, err
	}
	if ok, _ := reply.Lookup("ok").AsFloat64OK(); ok != 1 {
		return nil, &replyError{reply}
	}
	return reply, nil
}

// codeOf is the MongoDB code of err, a member's or the router's own.
func codeOf(err error) int32 {
	var re *replyError
	if errors.As(err, &re) {
		return re.code()
	}
	return int32(mongoerr.CodeOf(err))
}
