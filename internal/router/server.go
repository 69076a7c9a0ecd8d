package router

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/audit"
	"github.com/cairndb/cairn/internal/commands"
	"github.com/cairndb/cairn/internal/memberclient"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/tlsconn"
	"github.com/cairndb/cairn/internal/wire"
)

// Options configure a Router.
type Options struct {
	// ConfigDB is the config server replica set, "<set>/<host:port>,…".
	ConfigDB string
	// Key is the cluster's keyFile key: with it every connection to a
	// member authenticates as __system (memberclient).
	Key []byte
	// Listener is the TLS the router's clients connect with (mongos's
	// --tlsMode and files); nil or disabled: plain only.
	Listener *tlsconn.Listener
	// TLS, when set, is the configuration every connection to a member
	// uses (tlsconn.Member: under preferTLS and requireTLS, as mongos).
	TLS *tls.Config
	// Audit, when set, receives the router's audit events (audit.go).
	Audit  *audit.Log
	Logger *slog.Logger
}

// Router is a mongos: it accepts client connections and routes their
// commands to the shards by the routing table it caches from the config
// servers. It keeps no durable state.
type Router struct {
	log     *slog.Logger
	tls     *tlsconn.Listener
	audit   *audit.Log
	members *memberclient.Client
	config  *memberclient.Set
	access  access
	cache   *cache

	lns     []net.Listener
	closing atomic.Bool
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	connIDs atomic.Int64

	cursors  cursors
	sessions sessions
	clock    clusterClock // the newest cluster time shards answered (snapshot.go)
	stop     chan struct{}
	started  time.Time
}

// New returns a router of the cluster whose config servers opts.ConfigDB
// names. It contacts nobody until a command needs to.
func New(opts Options) (*Router, error) {
	name, hosts, err := memberclient.ParseConnString(opts.ConfigDB)
	if err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	members := memberclient.New(memberclient.Options{Key: opts.Key, TLS: opts.TLS})
	r := &Router{log: opts.Logger, tls: opts.Listener, audit: opts.Audit, members: members, config: members.Set(name, hosts), conns: map[net.Conn]struct{}{}, stop: make(chan struct{}), started: time.Now()}
	r.access.on, r.access.key = opts.Key != nil, opts.Key
	r.cache = newCache(r)
	r.cursors.m = map[int64]*routerCursor{}
	return r, nil
}

// Listen binds addr; call before Serve.
func (r *Router) Listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	r.lns = append(r.lns, ln)
	return nil
}

// Addr is the first bound address.
func (r *Router) Addr() net.Addr { return r.lns[0].Addr() }

// Serve accepts connections until Close.
func (r *Router) Serve() error {
	go r.pingLoop()
	for _, ln := range r.lns[1:] {
		go func() { _ = r.accept(ln) }()
	}
	return r.accept(r.lns[0])
}

func (r *Router) accept(ln net.Listener) error {
	for {
		nc, err := ln.Accept()
		if err != nil {
			if r.closing.Load() {
				return nil
			}
			return err
		}
		r.mu.Lock()
		r.conns[nc] = struct{}{}
		r.mu.Unlock()
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.serveConn(nc)
			r.mu.Lock()
			delete(r.conns, nc)
			r.mu.Unlock()
		}()
	}
}

// Close stops accepting, closes every connection and waits for them.
func (r *Router) Close() error {
	if r.closing.Swap(true) {
		return nil
	}
	close(r.stop)
	for _, ln := range r.lns {
		ln.Close()
	}
	r.mu.Lock()
	for nc := range r.conns {
		nc.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
	r.cache.closeShards()
	r.config.Close()
	return nil
}

// pingInterval is how often a router records itself in config.mongos.
const pingInterval = 30 * time.Second

// pingLoop records the router in config.mongos (sh.status()'s "most
// recently active mongoses"), now and every pingInterval, and then kills
// the cursors left idle too long.
func (r *Router) pingLoop() {
	host, _ := os.Hostname()
	_, port, _ := net.SplitHostPort(r.Addr().String())
	id := net.JoinHostPort(host, port)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := r.configUpsert(ctx, "mongos", bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: bson.D{
			{Key: "ping", Value: time.Now()}, {Key: "up", Value: int64(time.Since(r.started).Seconds())}, {Key: "waiting", Value: true},
			{Key: "mongoVersion", Value: commands.MongoVersion}, {Key: "advisoryHostFQDNs", Value: bson.A{}}}}})
		cancel()
		if err != nil && !r.closing.Load() {
			r.log.Warn("could not record the router in config.mongos", "err", err)
		}
		select {
		case <-r.stop:
			return
		case <-time.After(pingInterval):
		}
		r.cursors.reap(time.Now())
		r.reapSessions(time.Now())
		r.reloadUsers(context.Background()) // mongos's user cache interval
	}
}

// request is one client command.
type request struct {
	name string
	db   string
	body bsoncore.Document
	seqs map[string][]bsoncore.Document
	conn int64
	auth *connAuth
	idx  argIndex // hotArgs' values, read in one pass over body
}

// hotArgs are the fields read on the way of every routed command (its
// session, its targeting and paging, its database): arg finds them by one
// pass over the body rather than one Lookup each (a routed point read
// looked up about a dozen fields of its body). hotArg is its index.
var hotArgs = map[string]int{
	"$db": 0, "lsid": 1, "txnNumber": 2, "autocommit": 3, "startTransaction": 4,
	"readConcern": 5, "filter": 6, "sort": 7, "skip": 8, "limit": 9, "batchSize": 10,
	"singleBatch": 11, "collation": 12, "projection": 13, "ordered": 14,
}

// hotArg is hotArgs[name] as a switch (no hashing: it runs for every
// field of every command), -1 for a name not in it.
func hotArg(name string) int {
	switch name {
	case "$db":
		return 0
	case "lsid":
		return 1
	case "txnNumber":
		return 2
	case "autocommit":
		return 3
	case "startTransaction":
		return 4
	case "readConcern":
		return 5
	case "filter":
		return 6
	case "sort":
		return 7
	case "skip":
		return 8
	case "limit":
		return 9
	case "batchSize":
		return 10
	case "singleBatch":
		return 11
	case "collation":
		return 12
	case "projection":
		return 13
	case "ordered":
		return 14
	}
	return -1
}

const numHotArgs = 15

// argIndex holds the first value of each of hotArgs in the body it was
// built from (of): a request whose body is replaced (a snapshot read's
// copy) indexes its new body at its next arg.
type argIndex struct {
	of   bsoncore.Document
	vals [numHotArgs]bsoncore.Value
	has  [numHotArgs]bool
}

// arg is the body's field name (the first of that name, as Lookup).
func (q *request) arg(name string) (bsoncore.Value, bool) {
	if i := hotArg(name); i >= 0 {
		q.indexArgs()
		return q.idx.vals[i], q.idx.has[i]
	}
	v, err := q.body.LookupErr(name)
	return v, err == nil
}

// indexArgs reads hotArgs' values from the body unless the index is of
// this body already.
func (q *request) indexArgs() {
	if len(q.idx.of) == len(q.body) && len(q.body) >= 5 && &q.idx.of[0] == &q.body[0] {
		return
	}
	q.idx = argIndex{of: q.body}
	if len(q.body) < 5 {
		return
	}
	rest := q.body[4 : len(q.body)-1]
	for len(rest) > 0 {
		el, r, ok := bsoncore.ReadElement(rest)
		if !ok {
			return
		}
		rest = r
		if i := hotArg(string(el.KeyBytes())); i >= 0 && !q.idx.has[i] {
			q.idx.vals[i], q.idx.has[i] = el.Value(), true
		}
	}
}

func (q *request) str(name string) string {
	s, _ := q.body.Lookup(name).StringValueOK()
	return s
}

// coll is the collection the command names first (find: "c").
func (q *request) coll() string {
	s, _ := q.body.Index(0).Value().StringValueOK()
	return s
}

func (q *request) ns() string { return q.db + "." + q.coll() }

// docs are a write command's documents: from a document sequence or the
// body's array.
func (q *request) docs(field string) ([]bsoncore.Document, error) {
	if d, ok := q.seqs[field]; ok {
		return d, nil
	}
	v, ok := q.arg(field)
	if !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "BSON field '%s.%s' is missing but a required field", q.name, field)
	}
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.%s' is the wrong type '%s', expected type 'array'", q.name, field, v.Type)
	}
	vals, err := arr.Values()
	if err != nil {
		return nil, err
	}
	out := make([]bsoncore.Document, 0, len(vals))
	for _, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "%s.%s holds a %s, not a document", q.name, field, v.Type)
		}
		out = append(out, d)
	}
	return out, nil
}

func (r *Router) serveConn(nc net.Conn) {
	defer nc.Close()
	if r.tls.On() {
		tc, err := r.tls.Accept(nc)
		if err != nil {
			r.log.Info("closing a new connection", "remote", nc.RemoteAddr().String(), "err", err)
			return
		}
		nc = tc
		defer nc.Close()
	}
	id := r.connIDs.Add(1)
	ca := &connAuth{remote: nc.RemoteAddr().String()}
	if tc, ok := nc.(*tls.Conn); ok {
		// As a server: only a certificate that verified names a user.
		if st := tc.ConnectionState(); len(st.VerifiedChains) > 0 {
			ca.clientCert = st.PeerCertificates[0]
		}
	}
	rd := wire.NewReader(nc, 0)
	w := bufio.NewWriter(nc)
	var frame []byte
	var reqID int32
	for {
		msg, err := rd.ReadMessage()
		if err != nil {
			if !errors.Is(err, io.EOF) && !r.closing.Load() && !wire.IsFatal(err) {
				continue
			}
			return
		}
		var body bsoncore.Document
		var seqs map[string][]bsoncore.Document
		legacy := false
		switch msg.Header.OpCode {
		case wire.OpMsg:
			body = msg.Msg.Body
			for _, sq := range msg.Msg.Sequences {
				if seqs == nil {
					seqs = map[string][]bsoncore.Document{}
				}
				seqs[sq.Identifier] = sq.Documents
			}
		case wire.OpQuery:
			legacy = true
			body = msg.Query.Query
			if inner, err := body.LookupErr("$query"); err == nil {
				if d, ok := inner.DocumentOK(); ok {
					body = d
				}
			}
		default:
			return
		}
		req := &request{body: body, seqs: seqs, conn: id, auth: ca}
		if el, err := body.IndexErr(0); err == nil {
			req.name = el.Key()
		}
		if v, ok := req.arg("$db"); ok {
			req.db, _ = v.StringValueOK()
		}
		if legacy {
			req.db, _, _ = strings.Cut(msg.Query.FullCollectionName, ".")
		}
		reply := r.run(context.Background(), req)
		reqID++
		if legacy {
			frame = wire.AppendReply(frame[:0], reqID, msg.Header.RequestID, &wire.Reply{Flags: wire.ReplyAwaitCapable, Documents: []bsoncore.Document{reply}})
		} else {
			if msg.Msg.Flags&wire.FlagMoreToCome != 0 {
				continue
			}
			frame = wire.AppendMsg(frame[:0], reqID, msg.Header.RequestID, 0, reply)
		}
		if _, err := w.Write(frame); err != nil {
			return
		}
		if err := w.Flush(); err != nil {
			return
		}
	}
}

// run executes one command and returns its reply.
func (r *Router) run(ctx context.Context, req *request) (reply bsoncore.Document) {
	h, ok := handlers[req.name]
	if !ok {
		return errorReply(mongoerr.New(mongoerr.CommandNotFound, "no such command: '%s'", req.name))
	}
	if req.db == "" {
		return errorReply(mongoerr.New(mongoerr.FailedToParse, "OP_MSG requests require a $db argument"))
	}
	if r.audit != nil {
		defer func() { r.auditCommand(req, reply) }() // audit.go
	}
	if r.access.on {
		if err := r.authorize(ctx, req); err != nil {
			r.auditAuthCheck(req, err)
			return errorReply(err)
		}
	}
	op, err := r.beginSession(req) // sessions.go
	if err != nil {
		if mongoerr.CodeOf(err) == mongoerr.NoSuchTransaction {
			return withLabel(errorReply(err), labelTransient)
		}
		return errorReply(err)
	}
	if op != nil {
		ctx = withSession(ctx, op)
	}
	if rc := snapshotConcern(req); rc != nil && (op == nil || op.txn == nil) {
		reply, err = r.snapshotRead(ctx, h, req, rc) // snapshot.go: one time on every shard
	} else {
		reply, err = h(ctx, r, req)
	}
	if op != nil && op.txn != nil && !isTxnEnd(req.name) {
		reply, err = r.txnStatementOutcome(ctx, op, reply, err) // transactions.go
		if err == nil {
			reply = withRecoveryToken(reply, op.txn)
		}
	}
	if err != nil {
		out := errorReply(err)
		if op != nil && op.retryable && unreachable(err) {
			out = withLabel(out, labelRetryableWrite)
		}
		return out
	}
	return reply
}

// errorReply is a command's error: a member's reply passed on as it came,
// or the router's own.
func errorReply(err error) bsoncore.Document {
	var re *memberclient.ReplyError
	if errors.As(err, &re) {
		return re.Reply
	}
	return commands.ErrorReply(nil, err)
}
