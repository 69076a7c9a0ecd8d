package shardsvr

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
	"github.com/cairndb/cairn/internal/wire"
)

// peers sends commands to other cluster members (the config servers, the
// other shard of a migration) over the wire protocol: one OP_MSG, one
// reply, on pooled connections. Server packages do not import the driver
// (lint), and a member needs no more than this.
type peers struct {
	mu    sync.Mutex
	idle  map[string][]net.Conn
	reqID atomic.Int32
}

// dialTimeout bounds connecting to a member.
const dialTimeout = 3 * time.Second

// run sends cmd (which names its $db) to host and returns the reply; a
// reply with ok: 0 is returned as a *mongoerr.Error with its code.
func (p *peers) run(ctx context.Context, host string, cmd bsoncore.Document) (bsoncore.Document, error) {
	c, err := p.get(ctx, host)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	} else {
		_ = c.SetDeadline(time.Now().Add(2 * time.Minute))
	}
	msg := wire.AppendMsg(nil, p.reqID.Add(1), 0, 0, cmd)
	if _, err := c.Write(msg); err != nil {
		c.Close()
		return nil, fmt.Errorf("shardsvr: sending to %s: %w", host, err)
	}
	m, err := wire.NewReader(c, 0).ReadMessage()
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("shardsvr: reading the reply of %s: %w", host, err)
	}
	reply := bsoncore.Document(append([]byte(nil), m.Msg.Body...))
	p.put(host, c)
	return reply, replyError(reply)
}

// replyError is the error an ok: 0 reply carries, nil for ok: 1.
func replyError(reply bsoncore.Document) error {
	if ok, _ := reply.Lookup("ok").AsFloat64OK(); ok == 1 {
		return nil
	}
	code, _ := reply.Lookup("code").AsInt64OK()
	msg, _ := reply.Lookup("errmsg").StringValueOK()
	e := mongoerr.New(mongoerr.Code(code), "%s", msg)
	if info, ok := reply.Lookup("errInfo").DocumentOK(); ok {
		e.Extra = append(e.Extra, mongoerr.Field{Name: "errInfo", Value: rawDoc(info)})
	}
	return e
}

func (p *peers) get(ctx context.Context, host string) (net.Conn, error) {
	p.mu.Lock()
	if cs := p.idle[host]; len(cs) > 0 {
		c := cs[len(cs)-1]
		p.idle[host] = cs[:len(cs)-1]
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	d := net.Dialer{Timeout: dialTimeout}
	c, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, fmt.Errorf("shardsvr: connecting to %s: %w", host, err)
	}
	return c, nil
}

func (p *peers) put(host string, c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idle == nil {
		p.idle = map[string][]net.Conn{}
	}
	if len(p.idle[host]) >= 8 {
		c.Close()
		return
	}
	p.idle[host] = append(p.idle[host], c)
}

func (p *peers) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, cs := range p.idle {
		for _, c := range cs {
			c.Close()
		}
	}
	p.idle = nil
}

// hosts splits a connection string of MongoDB's shard and config server
// form, "set/host:port,host:port" or "host:port,…".
func hosts(conn string) []string {
	if i := strings.IndexByte(conn, '/'); i >= 0 {
		conn = conn[i+1:]
	}
	return strings.Split(conn, ",")
}

// retryable reports an error another member, or the same one a moment
// later, may not give: no primary, a network error, a step-down.
func retryable(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	switch mongoerr.CodeOf(err) {
	case mongoerr.NotWritablePrimary, mongoerr.NotPrimaryNoSecondaryOk, mongoerr.NotPrimaryOrSecondary,
		mongoerr.InterruptedDueToReplStateChange, mongoerr.PrimarySteppedDown, mongoerr.ShutdownInProgress,
		mongoerr.InterruptedAtShutdown, mongoerr.HostUnreachable, mongoerr.NotYetInitialized:
		return true
	case mongoerr.InternalError:
		return strings.Contains(err.Error(), "shardsvr: ") // ours: connecting, sending, reading
	}
	return false
}

// runPrimary runs cmd on the primary of the set conn names, trying each
// host in turn until one answers as primary or ctx ends (a config server
// set or shard in failover answers again within an election).
func (p *peers) runPrimary(ctx context.Context, conn string, cmd bsoncore.Document) (bsoncore.Document, error) {
	hs := hosts(conn)
	var last error
	for attempt := 0; ; attempt++ {
		for _, h := range hs {
			reply, err := p.run(ctx, h, cmd)
			if err == nil || !retryable(err) {
				return reply, err
			}
			last = err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("shardsvr: no primary of %s answered: %w (last: %v)", conn, ctx.Err(), last)
		case <-time.After(time.Duration(min(attempt+1, 10)) * 50 * time.Millisecond):
		}
	}
}
