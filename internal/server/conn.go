package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/commands"
	"github.com/cairndb/cairn/internal/hoptrace"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/opctx"
	"github.com/cairndb/cairn/internal/wire"
)

// errHangUp closes a connection without a reply, as a command asked
// (failCommand's closeConnection).
var errHangUp = errors.New("server: the command asked to close the connection")

// conn serves one client connection. Its buffers are reused for every
// request, so a steady stream of small requests does not allocate them.
type conn struct {
	srv  *Server
	nc   net.Conn
	sess *commands.Session
	r    *wire.Reader
	w    *bufio.Writer

	req commands.Request // the request being served (Request.Reset)
	// seqs holds the request's document sequences by identifier, cleared
	// and refilled for each message that has any (Run keeps none of it
	// after it returns, as with req).
	seqs  map[string][]bsoncore.Document
	reply []byte // the reply document being built
	frame []byte // the reply message
	comp  []byte // the compressed reply message
	reqID atomic.Int32

	busy atomic.Bool // a request is being served
	quit atomic.Bool // close once idle (shutdown)

	// ctx is the connection's, cancelled with opctx.ErrClientGone when
	// the client goes away mid-command (watch.go, which also interrupts
	// the command through its session) or the connection ends.
	ctx    context.Context
	cancel context.CancelCauseFunc
	watch  *watcher
}

func newConn(s *Server, nc net.Conn, id int64) *conn {
	c := &conn{
		srv:  s,
		nc:   nc,
		sess: &commands.Session{Env: s.env, ConnID: id, Remote: nc.RemoteAddr().String()},
		w:    bufio.NewWriterSize(nc, 16<<10),
	}
	under := nc
	if pc, ok := nc.(*peekedConn); ok {
		under = pc.Conn
	}
	if tc, ok := under.(*tls.Conn); ok {
		// Only a certificate that verified against --tlsCAFile names a
		// user (MONGODB-X509); --tlsAllowInvalidCertificates lets
		// others connect, not authenticate.
		if st := tc.ConnectionState(); len(st.VerifiedChains) > 0 {
			c.sess.ClientCert = st.PeerCertificates[0]
		}
	}
	c.ctx, c.cancel = context.WithCancelCause(context.Background())
	c.watch = newWatcher(c)
	c.sess.ShortWait = c.watch.shortWait
	c.r = wire.NewReader(watchedReader{c.watch}, commands.MaxMessageSize)
	return c
}

// closeWhenIdle closes the connection now if it is between requests, or
// after its current request otherwise.
func (c *conn) closeWhenIdle() {
	c.quit.Store(true)
	if !c.busy.Load() {
		_ = c.nc.SetReadDeadline(pastDeadline)
	}
}

func (c *conn) serve() {
	log := c.srv.log.With("conn", c.sess.ConnID, "remote", c.sess.Remote)
	log.Debug("connection accepted")
	defer func() {
		if r := recover(); r != nil {
			log.Error("connection panicked; closing it", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
		c.cancel(opctx.ErrClientGone)
		_ = c.nc.Close()
		log.Debug("connection closed")
	}()
	for !c.quit.Load() {
		msg, err := c.r.ReadMessage()
		if err != nil {
			if c.handleReadError(err, log) {
				continue
			}
			return
		}
		c.srv.env.Network.Request(int64(msg.Header.MessageLength))
		c.busy.Store(true)
		c.watch.begin()
		err = c.handle(msg)
		c.watch.end()
		c.busy.Store(false)
		if err != nil {
			log.Debug("closing connection", "err", err)
			return
		}
		if c.ctx.Err() != nil {
			log.Debug("client went away during a command")
			return
		}
	}
}

// handleReadError answers a recoverable framing error and reports whether
// the connection can go on.
func (c *conn) handleReadError(err error, log interface{ Info(string, ...any) }) bool {
	if errors.Is(err, io.EOF) || c.quit.Load() {
		return false
	}
	var we *wire.Error
	if !errors.As(err, &we) || we.Fatal {
		log.Info("closing connection after a bad message", "err", err)
		return false
	}
	reply := commands.ErrorReply(c.reply[:0], mongoerr.New(mongoerr.FailedToParse, "%v", err))
	if we.HeaderKnown && we.Header.OpCode == wire.OpQuery {
		return c.writeLegacy(we.Header.RequestID, reply) == nil
	}
	_, err = c.writeMsg(we.Header.RequestID, reply, 0, false, 0)
	return err == nil
}

func (c *conn) handle(msg *wire.Message) error {
	switch msg.Header.OpCode {
	case wire.OpMsg:
		return c.handleMsg(msg)
	case wire.OpQuery:
		return c.handleQuery(msg)
	default:
		return fmt.Errorf("unsupported opcode %v", msg.Header.OpCode)
	}
}

func (c *conn) handleMsg(msg *wire.Message) error {
	t0 := hoptrace.Now()
	var seqs map[string][]bsoncore.Document
	if len(msg.Msg.Sequences) > 0 {
		if c.seqs == nil {
			c.seqs = make(map[string][]bsoncore.Document, len(msg.Msg.Sequences))
		}
		clear(c.seqs)
		seqs = c.seqs
		for _, sq := range msg.Msg.Sequences {
			seqs[sq.Identifier] = sq.Documents
		}
	}
	var reply bsoncore.Document
	req := &c.req
	if err := req.ResetSplit(msg.Msg.Body, msg.Msg.BodyElements, "", seqs); err != nil {
		req = nil
		reply = commands.ErrorReply(c.reply[:0], err)
	} else {
		if wait, ok := c.awaitableHello(req); ok {
			return c.streamHello(msg, req, wait)
		}
		reply = commands.Run(context.Background(), c.sess, req, c.reply[:0])
	}
	c.reply = reply[:0]
	if c.sess.TakeHangUp() {
		return errHangUp
	}
	if msg.Msg.Flags&wire.FlagMoreToCome != 0 {
		return nil // an unacknowledged write (w: 0): the client reads no reply
	}
	compress := msg.Compressed && (req == nil || compressible(req.Name))
	_, err := c.writeMsg(msg.Header.RequestID, reply, 0, compress, msg.Compressor)
	if hoptrace.Enabled && req != nil {
		switch req.Name {
		case "update":
			hoptrace.Since(hoptrace.OpUpdate, t0)
		case "find":
			hoptrace.Since(hoptrace.OpFind, t0)
		}
	}
	return err
}

// awaitableHello reports whether req is a monitoring hello that asks to be
// answered only when the topology changes or maxAwaitTimeMS passes: it names
// our current topologyVersion (server discovery and monitoring spec).
func (c *conn) awaitableHello(req *commands.Request) (time.Duration, bool) {
	if !isHandshake(req.Name) {
		return 0, false
	}
	mv, ok := req.Arg("maxAwaitTimeMS")
	if !ok {
		return 0, false
	}
	ms, ok := mv.AsInt64OK()
	if !ok || ms < 0 {
		return 0, false
	}
	tv, ok := req.Arg("topologyVersion")
	tvDoc, isDoc := tv.DocumentOK()
	if !ok || !isDoc {
		return 0, false
	}
	pid, ok := tvDoc.Lookup("processId").ObjectIDOK()
	counter, _ := tvDoc.Lookup("counter").AsInt64OK()
	var current int64
	if rs := c.srv.env.Repl; rs != nil {
		current, _ = rs.Topology()
	}
	if !ok || pid != c.srv.env.ProcessID || counter != current {
		return 0, false // the client's view is stale: answer at once
	}
	return time.Duration(ms) * time.Millisecond, true
}

// streamHello answers an awaitable hello after the wait. With exhaustAllowed
// it then keeps answering, one reply per wait, each flagged moreToCome and
// responding to the previous reply, until the client goes away or the server
// shuts down (then a last reply without moreToCome ends the stream).
func (c *conn) streamHello(msg *wire.Message, req *commands.Request, wait time.Duration) error {
	exhaust := msg.Msg.Flags&wire.FlagExhaustAllowed != 0
	responseTo := msg.Header.RequestID
	// seen is the topologyVersion counter the client last saw.
	var seen int64
	if tv, ok := req.Arg("topologyVersion"); ok {
		if d, ok := tv.DocumentOK(); ok {
			seen, _ = d.Lookup("counter").AsInt64OK()
		}
	}
	for {
		var changed <-chan struct{}
		if rs := c.srv.env.Repl; rs != nil {
			// A replica set member answers at once when its topology
			// changes (a new primary, a reconfig), so drivers learn it
			// within milliseconds.
			var counter int64
			counter, changed = rs.Topology()
			if counter != seen {
				changed = closedChan
			}
			seen = counter // the reply shows this counter or a later one
		}
		stopping := c.sleep(wait, changed)
		if rs := c.srv.env.Repl; rs != nil {
			seen, _ = rs.Topology()
		}
		reply := commands.Run(context.Background(), c.sess, req, c.reply[:0])
		c.reply = reply[:0]
		if c.sess.TakeHangUp() {
			return errHangUp
		}
		var flags wire.MsgFlags
		if exhaust && !stopping {
			flags = wire.FlagMoreToCome
		}
		id, err := c.writeMsg(responseTo, reply, flags, false, 0)
		if err != nil || flags == 0 {
			return err
		}
		responseTo = id
	}
}

// closedChan is a channel that is always ready.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// sleep waits d (or until changed is closed), or less if the server shuts down; it reports a shutdown.
func (c *conn) sleep(d time.Duration, changed <-chan struct{}) (stopping bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return false
	case <-changed:
		return false
	case <-c.srv.done:
		return true
	case <-c.ctx.Done():
		return true // the client went away
	}
}

// compressible reports whether a reply to the named command may be
// compressed; the handshake and authentication never are (compression spec).
func compressible(name string) bool {
	switch strings.ToLower(name) {
	case "hello", "ismaster", "saslstart", "saslcontinue", "getnonce", "authenticate",
		"createuser", "updateuser", "copydbsaslstart", "copydbgetnonce", "copydb":
		return false
	}
	return true
}

// handleQuery serves the legacy OP_QUERY handshake; since MongoDB 6.0 that is
// all OP_QUERY may carry.
func (c *conn) handleQuery(msg *wire.Message) error {
	q := &msg.Query
	db, coll, _ := strings.Cut(q.FullCollectionName, ".")
	body := q.Query
	if inner, err := body.LookupErr("$query"); err == nil {
		if d, ok := inner.DocumentOK(); ok {
			body = d // the legacy wrapped form {$query: {...}, $readPreference: ...}
		}
	}
	var reply bsoncore.Document
	req, err := commands.NewRequest(body, db, nil)
	switch {
	case err != nil:
		reply = commands.ErrorReply(c.reply[:0], err)
	case coll != "$cmd" || !isHandshake(req.Name):
		reply = commands.ErrorReply(c.reply[:0], mongoerr.New(mongoerr.UnsupportedOpQueryCommand,
			"Unsupported OP_QUERY command: %s. The client driver may require an upgrade. For more details see https://dochub.mongodb.org/core/legacy-opcode-removal", req.Name))
	default:
		reply = commands.Run(context.Background(), c.sess, req, c.reply[:0])
	}
	c.reply = reply[:0]
	if c.sess.TakeHangUp() {
		return errHangUp
	}
	return c.writeLegacy(msg.Header.RequestID, reply)
}

func isHandshake(name string) bool {
	switch name {
	case "isMaster", "ismaster", "hello":
		return true
	}
	return false
}

// writeMsg sends an OP_MSG reply and returns its requestID.
func (c *conn) writeMsg(responseTo int32, body bsoncore.Document, flags wire.MsgFlags, compress bool, comp wire.Compressor) (int32, error) {
	id := c.reqID.Add(1)
	c.frame = wire.AppendMsg(c.frame[:0], id, responseTo, flags, body)
	return id, c.send(c.frame, compress, comp)
}

func (c *conn) writeLegacy(responseTo int32, body bsoncore.Document) error {
	c.frame = wire.AppendReply(c.frame[:0], c.reqID.Add(1), responseTo, &wire.Reply{Flags: wire.ReplyAwaitCapable, Documents: []bsoncore.Document{body}})
	return c.send(c.frame, false, 0)
}

func (c *conn) send(frame []byte, compress bool, comp wire.Compressor) error {
	c.srv.env.Network.BytesOut.Add(int64(len(frame)))
	if compress {
		out, err := wire.AppendCompressed(c.comp[:0], frame, comp, wire.DefaultZlibLevel)
		if err == nil {
			c.comp = out
			frame = out
		}
	}
	if _, err := c.w.Write(frame); err != nil {
		return err
	}
	return c.w.Flush()
}
