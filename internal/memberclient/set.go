package memberclient

import (
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
)

// ParseConnString reads "<set>/<host:port>,<host:port>" (the --configdb,
// addShard and config.shards forms), a bare host list, or a mongodb://
// URI's hosts; a host without a port gets 27017.
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

// Set is a replica set (or a standalone, Name ""): its seed hosts and the
// primary it last found. Commands go to the primary.
type Set struct {
	Name    string
	c       *Client
	mu      sync.Mutex
	order   []string
	primary atomic.Pointer[Host]
}

// Set returns the set named name with seed hosts, on this client's pools.
func (c *Client) Set(name string, hosts []string) *Set {
	s := &Set{Name: name, c: c}
	for _, h := range hosts {
		s.add(h)
	}
	return s
}

// SetOf is Set for a connection string (ParseConnString).
func (c *Client) SetOf(conn string) (*Set, error) {
	name, hosts, err := ParseConnString(conn)
	if err != nil {
		return nil, err
	}
	return c.Set(name, hosts), nil
}

func (s *Set) add(addr string) *Host {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.order {
		if a == addr {
			return s.c.Host(addr)
		}
	}
	s.order = append(s.order, addr)
	return s.c.Host(addr)
}

func (s *Set) hosts() []*Host {
	s.mu.Lock()
	defer s.mu.Unlock()
	hs := make([]*Host, 0, len(s.order))
	for _, a := range s.order {
		hs = append(hs, s.c.Host(a))
	}
	return hs
}

// ConnString is the set's "<name>/<hosts>" form (the hosts alone for a
// standalone).
func (s *Set) ConnString() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Name == "" {
		return strings.Join(s.order, ",")
	}
	return s.Name + "/" + strings.Join(s.order, ",")
}

// Close drops the idle connections of the set's hosts.
func (s *Set) Close() {
	for _, h := range s.hosts() {
		h.Close()
	}
}

var helloCmd = bsoncore.NewDocumentBuilder().AppendInt32("hello", 1).AppendString("$db", "admin").Build()

// FindPrimary asks every host for hello until one says it is the writable
// primary (a primary it names joins the hosts), for up to wait.
func (s *Set) FindPrimary(ctx context.Context, wait time.Duration) (*Host, error) {
	deadline := time.Now().Add(wait)
	var last error
	for {
		hosts := s.hosts()
		refused := 0 // hosts that refuse us for good (a wrong key)
		for _, h := range hosts {
			hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			reply, err := h.Run(hctx, helloCmd)
			cancel()
			if err != nil {
				last = err
				if !Retryable(err) && !errors.Is(err, context.DeadlineExceeded) {
					refused++
				}
				continue
			}
			if w, _ := reply.Lookup("isWritablePrimary").BooleanOK(); w {
				s.primary.Store(h)
				return h, nil
			}
			if _, ok := reply.Lookup("setName").StringValueOK(); !ok && s.Name == "" {
				s.primary.Store(h) // a standalone is its own primary
				return h, nil
			}
			if p, ok := reply.Lookup("primary").StringValueOK(); ok {
				if s.add(p) != h {
					continue
				}
			}
			last = fmt.Errorf("%s is not primary", h.addr)
		}
		if refused == len(hosts) || time.Now().After(deadline) || ctx.Err() != nil {
			return nil, mongoerr.New(mongoerr.FailedToSatisfyReadPreference, "could not find a primary of %s: %v", s.ConnString(), last)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Run sends cmd to the set's primary and returns the reply, ok: 0
// included. A network error or a not-primary answer makes it look for the
// primary again (for up to 10s) and retry once.
func (s *Set) Run(ctx context.Context, cmd bsoncore.Document) (bsoncore.Document, error) {
	return s.RunSeq(ctx, cmd, nil)
}

// RunSeq is Run with a document sequence (nil: none).
func (s *Set) RunSeq(ctx context.Context, cmd bsoncore.Document, seq *Sequence) (bsoncore.Document, error) {
	return s.runSeq(ctx, cmd, seq, true)
}

// RunSeqOnce is RunSeq for a command that must not be sent twice: a write
// without a txnNumber, which a member may have applied before the
// connection broke (the shard's session table dedupes only retryable
// writes). A not-primary answer (nothing applied) still makes it look for
// the primary and retry; a network error is returned as it is, as mongos
// returns it rather than risk a second application.
func (s *Set) RunSeqOnce(ctx context.Context, cmd bsoncore.Document, seq *Sequence) (bsoncore.Document, error) {
	return s.runSeq(ctx, cmd, seq, false)
}

func (s *Set) runSeq(ctx context.Context, cmd bsoncore.Document, seq *Sequence, resend bool) (bsoncore.Document, error) {
	for attempt := 0; ; attempt++ {
		h := s.primary.Load()
		if h == nil {
			var err error
			if h, err = s.FindPrimary(ctx, 10*time.Second); err != nil {
				return nil, err
			}
		}
		reply, err := h.RunSeq(ctx, cmd, seq)
		if err == nil {
			if ok, _ := reply.Lookup("ok").AsFloat64OK(); ok == 1 {
				return reply, nil
			}
			if code, _ := reply.Lookup("code").AsInt32OK(); !NotPrimary(mongoerr.Code(code)) {
				return reply, nil
			}
		}
		s.primary.CompareAndSwap(h, nil)
		if attempt >= 1 || err != nil && !resend {
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

// RunPrimary runs cmd on the primary of the set conn names, trying each
// host in turn until one answers as primary or ctx ends: a set in
// failover answers again within an election, and a migration or a
// metadata commit waits for it. An ok: 0 reply is a *ReplyError.
func (c *Client) RunPrimary(ctx context.Context, conn string, cmd bsoncore.Document) (bsoncore.Document, error) {
	_, hosts, err := ParseConnString(conn)
	if err != nil {
		return nil, err
	}
	var last error
	for attempt := 0; ; attempt++ {
		for _, addr := range hosts {
			reply, err := Check(c.Run(ctx, addr, cmd))
			if err == nil || !Retryable(err) {
				return reply, err
			}
			last = err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("memberclient: no primary of %s answered: %w (last: %v)", conn, ctx.Err(), last)
		case <-time.After(time.Duration(min(attempt+1, 10)) * 50 * time.Millisecond):
		}
	}
}
