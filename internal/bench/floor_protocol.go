package bench

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/commands"
	"github.com/cairndb/cairn/internal/wire"
)

// The protocol floor is a server that speaks the MongoDB wire protocol the
// way Cairn does — the same framing code (internal/wire), the same
// handshake limits and version — and answers from Go maps guarded by one
// RWMutex, with no durability. What a request costs it is what the driver,
// the socket and BSON cost before any database work: the floor under
// Cairn's throughput and server CPU.
//
// It understands exactly what the workloads send: the handshake (hello,
// isMaster, ping, buildInfo, endSessions), insert, find by _id equality or
// {_id: {$gte: s}} with sort {_id: 1} and a limit, getMore, killCursors,
// update by _id (a replacement or $set), delete by _id, count and drop.
// Documents need string _ids. Anything else is CommandNotFound or
// BadValue, never a guess.
//
// Its hello carries no topologyVersion, so drivers poll it every
// heartbeat (10 s) instead of streaming hellos, as they do with any
// server that does not implement awaitable hello.

// FloorServerArg, as the first argument of `cairn bench`, runs the protocol
// floor server in that process instead of a benchmark: the harness starts
// it as a child process so that its CPU is accounted like Cairn's.
const FloorServerArg = "--protocol-floor-server"

// RunFloorServer runs the protocol floor until SIGINT or SIGTERM; args are
// --port and --bind_ip. It prints the listening address on stdout.
func RunFloorServer(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("protocol-floor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	port := fs.Int("port", 0, "TCP port (0: any free port)")
	bind := fs.String("bind_ip", "127.0.0.1", "address to listen on")
	walDir := fs.String("wal", "", "directory of a write-ahead log that every write is synced to before its reply (the durable floor)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var wal *floorWAL
	if *walDir != "" {
		var err error
		if wal, err = openFloorWAL(*walDir); err != nil {
			fmt.Fprintln(stderr, "durable floor:", err)
			return 1
		}
	}
	f, err := startProtocolFloor(net.JoinHostPort(*bind, strconv.Itoa(*port)), wal)
	if err != nil {
		fmt.Fprintln(stderr, "protocol floor:", err)
		_ = wal.close()
		return 1
	}
	fmt.Fprintln(stdout, "protocol floor listening on", f.addr())
	untilSignal()
	f.close()
	if err := wal.close(); err != nil {
		fmt.Fprintln(stderr, "durable floor:", err)
		return 1
	}
	return 0
}

type protocolFloor struct {
	floorListener
	connID atomic.Int64
	// wal, when set, makes this the durable floor: every write command's
	// statements are synced to it before the reply (floor_durable.go).
	wal *floorWAL

	mu    sync.RWMutex
	colls map[string]*floorColl // by "db.coll"

	curMu   sync.Mutex
	cursors map[int64][]bsoncore.Document
	nextCur int64
}

// floorColl is a collection: documents by _id, and the _ids in order for
// range finds.
type floorColl struct {
	docs map[string]bsoncore.Document
	ids  sortedKeys
}

func startProtocolFloor(addr string, wal *floorWAL) (*protocolFloor, error) {
	f := &protocolFloor{
		wal:     wal,
		colls:   map[string]*floorColl{},
		cursors: map[int64][]bsoncore.Document{},
	}
	if err := f.listen(addr); err != nil {
		return nil, err
	}
	f.wg.Go(f.accept)
	return f, nil
}

func (f *protocolFloor) accept() {
	for {
		nc, err := f.ln.Accept()
		if err != nil {
			return
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true) // as Cairn's server does
		}
		f.track(nc, true)
		f.wg.Go(func() {
			f.serveConn(nc)
			f.track(nc, false)
			_ = nc.Close()
		})
	}
}

// floorConn holds one connection's reusable buffers.
type floorConn struct {
	f     *protocolFloor
	id    int64
	reqID int32
	reply []byte
	frame []byte
	docs  []bsoncore.Document
}

func (f *protocolFloor) serveConn(nc net.Conn) {
	r := wire.NewReader(nc, commands.MaxMessageSize)
	w := bufio.NewWriterSize(nc, 16<<10)
	c := &floorConn{f: f, id: f.connID.Add(1)}
	for {
		msg, err := r.ReadMessage()
		if err != nil {
			return
		}
		c.reqID++
		switch msg.Header.OpCode {
		case wire.OpMsg:
			c.reply = c.command(c.reply[:0], msg.Msg.Body, "", msg.Msg.Sequences)
			if msg.Msg.Flags&wire.FlagMoreToCome != 0 {
				continue
			}
			c.frame = wire.AppendMsg(c.frame[:0], c.reqID, msg.Header.RequestID, 0, c.reply)
		case wire.OpQuery:
			body := msg.Query.Query
			if inner, err := body.LookupErr("$query"); err == nil {
				if d, ok := inner.DocumentOK(); ok {
					body = d
				}
			}
			db, _, _ := strings.Cut(msg.Query.FullCollectionName, ".")
			c.reply = c.command(c.reply[:0], body, db, nil)
			c.frame = wire.AppendReply(c.frame[:0], c.reqID, msg.Header.RequestID,
				&wire.Reply{Flags: wire.ReplyAwaitCapable, Documents: []bsoncore.Document{c.reply}})
		default:
			return
		}
		if _, err := w.Write(c.frame); err != nil {
			return
		}
		if err := w.Flush(); err != nil {
			return
		}
	}
}

// floorError is a command failure with MongoDB's code.
type floorError struct {
	code     int32
	codeName string
	msg      string
}

func (e *floorError) Error() string { return e.msg }

func badValue(format string, args ...any) error {
	return &floorError{2, "BadValue", "protocol floor: " + fmt.Sprintf(format, args...)}
}

// command runs one command and appends its reply to dst.
func (c *floorConn) command(dst []byte, body bsoncore.Document, db string, seqs []wire.Sequence) []byte {
	first, err := body.IndexErr(0)
	if err != nil {
		return errorReply(dst, badValue("empty command"))
	}
	name := first.Key()
	if v, err := body.LookupErr("$db"); err == nil {
		db, _ = v.StringValueOK()
	}
	collName, _ := first.Value().StringValueOK()
	ns := db + "." + collName
	start, out := bsoncore.AppendDocumentStart(dst)
	switch name {
	case "hello", "isMaster", "ismaster":
		out = c.hello(out, body, name)
	case "ping", "endSessions":
	case "buildInfo", "buildinfo":
		out = bsoncore.AppendStringElement(out, "version", commands.MongoVersion)
		out = bsoncore.AppendArrayElement(out, "versionArray", int32Array(commands.MongoVersionArray))
		out = bsoncore.AppendInt32Element(out, "maxBsonObjectSize", commands.MaxBSONObjectSize)
	case "insert":
		docs := docsArg(body, seqs, "documents")
		if out, err = c.insert(out, ns, docs); err == nil {
			err = c.f.logWrite(docs)
		}
	case "find":
		out, err = c.find(out, ns, body)
	case "getMore":
		out, err = c.getMore(out, body, db)
	case "killCursors":
		out = c.killCursors(out, body)
	case "update":
		stmts := docsArg(body, seqs, "updates")
		if out, err = c.update(out, ns, stmts); err == nil {
			err = c.f.logWrite(stmts)
		}
	case "delete":
		stmts := docsArg(body, seqs, "deletes")
		if out, err = c.delete(out, ns, stmts); err == nil {
			err = c.f.logWrite(stmts)
		}
	case "count":
		out, err = c.count(out, ns, body)
	case "drop":
		c.f.mu.Lock()
		delete(c.f.colls, ns)
		c.f.mu.Unlock()
		out = bsoncore.AppendStringElement(out, "ns", ns)
	default:
		err = &floorError{59, "CommandNotFound", fmt.Sprintf("no such command: '%s' (the protocol floor answers only what the benchmark sends)", name)}
	}
	if err != nil {
		return errorReply(dst, err)
	}
	out = bsoncore.AppendDoubleElement(out, "ok", 1)
	out, _ = bsoncore.AppendDocumentEnd(out, start)
	return out
}

func errorReply(dst []byte, err error) []byte {
	fe, ok := err.(*floorError)
	if !ok {
		fe = &floorError{8, "UnknownError", err.Error()}
	}
	start, out := bsoncore.AppendDocumentStart(dst)
	out = bsoncore.AppendDoubleElement(out, "ok", 0)
	out = bsoncore.AppendStringElement(out, "errmsg", fe.msg)
	out = bsoncore.AppendInt32Element(out, "code", fe.code)
	out = bsoncore.AppendStringElement(out, "codeName", fe.codeName)
	out, _ = bsoncore.AppendDocumentEnd(out, start)
	return out
}

func int32Array(vs []int32) bsoncore.Array {
	start, a := bsoncore.AppendArrayStart(nil)
	for i, v := range vs {
		a = bsoncore.AppendInt32Element(a, strconv.Itoa(i), v)
	}
	a, _ = bsoncore.AppendArrayEnd(a, start)
	return a
}

func (c *floorConn) hello(out []byte, body bsoncore.Document, name string) []byte {
	if v, err := body.LookupErr("helloOk"); err == nil && v.Boolean() {
		out = bsoncore.AppendBooleanElement(out, "helloOk", true)
	}
	primary := "isWritablePrimary"
	if name != "hello" {
		primary = "ismaster"
	}
	out = bsoncore.AppendBooleanElement(out, primary, true)
	out = bsoncore.AppendInt32Element(out, "maxBsonObjectSize", commands.MaxBSONObjectSize)
	out = bsoncore.AppendInt32Element(out, "maxMessageSizeBytes", commands.MaxMessageSize)
	out = bsoncore.AppendInt32Element(out, "maxWriteBatchSize", commands.MaxWriteBatchSize)
	out = bsoncore.AppendDateTimeElement(out, "localTime", time.Now().UnixMilli())
	out = bsoncore.AppendInt32Element(out, "logicalSessionTimeoutMinutes", commands.LogicalSessionTimeoutMinutes)
	out = bsoncore.AppendInt64Element(out, "connectionId", c.id)
	out = bsoncore.AppendInt32Element(out, "minWireVersion", commands.MinWireVersion)
	out = bsoncore.AppendInt32Element(out, "maxWireVersion", commands.MaxWireVersion)
	return bsoncore.AppendBooleanElement(out, "readOnly", false)
}

// docsArg returns a command's document list: a kind-1 sequence, or an
// array in the body.
func docsArg(body bsoncore.Document, seqs []wire.Sequence, name string) []bsoncore.Document {
	for _, s := range seqs {
		if s.Identifier == name {
			return s.Documents
		}
	}
	arr, ok := body.Lookup(name).ArrayOK()
	if !ok {
		return nil
	}
	vals, _ := arr.Values()
	docs := make([]bsoncore.Document, 0, len(vals))
	for _, v := range vals {
		if d, ok := v.DocumentOK(); ok {
			docs = append(docs, d)
		}
	}
	return docs
}

// coll returns the collection ns, creating it when create is set; callers
// hold f.mu (exclusively to create).
func (f *protocolFloor) coll(ns string, create bool) *floorColl {
	c := f.colls[ns]
	if c == nil && create {
		c = &floorColl{docs: map[string]bsoncore.Document{}}
		f.colls[ns] = c
	}
	return c
}

func stringID(doc bsoncore.Document) (string, error) {
	v, err := doc.LookupErr("_id")
	if err != nil {
		return "", badValue("document without _id")
	}
	s, ok := v.StringValueOK()
	if !ok {
		return "", badValue("_id must be a string, not %s", v.Type)
	}
	return s, nil
}

func (c *floorConn) insert(out []byte, ns string, docs []bsoncore.Document) ([]byte, error) {
	type dup struct {
		index int
		id    string
	}
	var dups []dup
	n := 0
	c.f.mu.Lock()
	coll := c.f.coll(ns, true)
	for i, d := range docs {
		id, err := stringID(d)
		if err != nil {
			c.f.mu.Unlock()
			return out, err
		}
		if _, exists := coll.docs[id]; exists {
			dups = append(dups, dup{i, id})
			break // ordered: stop at the first error
		}
		coll.docs[id] = append(bsoncore.Document(nil), d...)
		coll.ids.insert(id)
		n++
	}
	c.f.mu.Unlock()
	out = bsoncore.AppendInt32Element(out, "n", int32(n))
	if len(dups) > 0 {
		start, arr := bsoncore.AppendArrayElementStart(out, "writeErrors")
		for i, d := range dups {
			ds, e := bsoncore.AppendDocumentElementStart(arr, strconv.Itoa(i))
			e = bsoncore.AppendInt32Element(e, "index", int32(d.index))
			e = bsoncore.AppendInt32Element(e, "code", 11000)
			e = bsoncore.AppendStringElement(e, "errmsg", "E11000 duplicate key error collection: "+ns+" index: _id_ dup key: { _id: \""+d.id+"\" }")
			arr, _ = bsoncore.AppendDocumentEnd(e, ds)
		}
		out, _ = bsoncore.AppendArrayEnd(arr, start)
	}
	return out, nil
}

// idSelector is a filter the floor understands: {} (all), {_id: s}
// (point) or {_id: {$gte: s}} (range).
type idSelector struct {
	all, point, gte bool
	id              string
}

func parseSelector(filter bsoncore.Document) (idSelector, error) {
	elems, err := filter.Elements()
	if err != nil || len(elems) == 0 {
		return idSelector{all: true}, nil
	}
	if len(elems) != 1 || elems[0].Key() != "_id" {
		return idSelector{}, badValue("filter %s: only {_id: s} and {_id: {$gte: s}}", filter)
	}
	v := elems[0].Value()
	if s, ok := v.StringValueOK(); ok {
		return idSelector{point: true, id: s}, nil
	}
	if d, ok := v.DocumentOK(); ok {
		if s, ok := d.Lookup("$gte").StringValueOK(); ok {
			if n, _ := d.Elements(); len(n) == 1 {
				return idSelector{gte: true, id: s}, nil
			}
		}
	}
	return idSelector{}, badValue("filter %s: only {_id: s} and {_id: {$gte: s}}", filter)
}

// matching returns up to limit (0: no limit) documents sel selects, in _id
// order; callers hold f.mu for reading. The documents are immutable
// (replacing one stores a new slice), so they stay valid after unlocking.
func (coll *floorColl) matching(dst []bsoncore.Document, sel idSelector, limit int) []bsoncore.Document {
	if coll == nil {
		return dst
	}
	if sel.point {
		if d, ok := coll.docs[sel.id]; ok {
			dst = append(dst, d)
		}
		return dst
	}
	from := ""
	if sel.gte {
		from = sel.id
	}
	coll.ids.ascend(from, func(id string) bool {
		dst = append(dst, coll.docs[id])
		return limit == 0 || len(dst) < limit
	})
	return dst
}

func intArg(body bsoncore.Document, name string) int64 {
	v, err := body.LookupErr(name)
	if err != nil {
		return 0
	}
	if n, ok := v.AsInt64OK(); ok {
		return n
	}
	return 0
}

func (c *floorConn) find(out []byte, ns string, body bsoncore.Document) ([]byte, error) {
	filter, _ := body.Lookup("filter").DocumentOK()
	sel, err := parseSelector(filter)
	if err != nil {
		return out, err
	}
	if sortDoc, ok := body.Lookup("sort").DocumentOK(); ok {
		if elems, _ := sortDoc.Elements(); len(elems) > 0 {
			dir, _ := elems[0].Value().AsInt64OK()
			if len(elems) != 1 || elems[0].Key() != "_id" || dir != 1 {
				return out, badValue("sort %s: only {_id: 1}", sortDoc)
			}
		}
	}
	limit := intArg(body, "limit")
	single := false
	if limit < 0 {
		limit, single = -limit, true
	}
	if v, err := body.LookupErr("singleBatch"); err == nil && v.Boolean() {
		single = true
	}
	batch := int64(101)
	if _, err := body.LookupErr("batchSize"); err == nil {
		batch = intArg(body, "batchSize")
	}
	c.f.mu.RLock()
	c.docs = c.f.coll(ns, false).matching(c.docs[:0], sel, int(limit))
	c.f.mu.RUnlock()
	return c.cursorReply(out, ns, "firstBatch", c.docs, batch, single), nil
}

// cursorReply appends {cursor: {<field>: [...], id, ns}}, registering a
// cursor for the documents past the batch.
func (c *floorConn) cursorReply(out []byte, ns, field string, docs []bsoncore.Document, batch int64, single bool) []byte {
	n := len(docs)
	if batch > 0 && int64(n) > batch {
		n = int(batch)
	}
	var id int64
	if n < len(docs) && !single {
		c.f.curMu.Lock()
		c.f.nextCur++
		id = c.f.nextCur
		c.f.cursors[id] = append([]bsoncore.Document(nil), docs[n:]...)
		c.f.curMu.Unlock()
	}
	cs, out := bsoncore.AppendDocumentElementStart(out, "cursor")
	as, out := bsoncore.AppendArrayElementStart(out, field)
	for i, d := range docs[:n] {
		out = bsoncore.AppendDocumentElement(out, arrayIndex(i), d)
	}
	out, _ = bsoncore.AppendArrayEnd(out, as)
	out = bsoncore.AppendInt64Element(out, "id", id)
	out = bsoncore.AppendStringElement(out, "ns", ns)
	out, _ = bsoncore.AppendDocumentEnd(out, cs)
	return out
}

var arrayIndexes = func() []string {
	s := make([]string, 128)
	for i := range s {
		s[i] = strconv.Itoa(i)
	}
	return s
}()

func arrayIndex(i int) string {
	if i < len(arrayIndexes) {
		return arrayIndexes[i]
	}
	return strconv.Itoa(i)
}

func (c *floorConn) getMore(out []byte, body bsoncore.Document, db string) ([]byte, error) {
	id, _ := body.Lookup("getMore").Int64OK()
	coll, _ := body.Lookup("collection").StringValueOK()
	batch := intArg(body, "batchSize")
	c.f.curMu.Lock()
	docs, ok := c.f.cursors[id]
	delete(c.f.cursors, id)
	c.f.curMu.Unlock()
	if !ok {
		return out, &floorError{43, "CursorNotFound", fmt.Sprintf("cursor id %d not found", id)}
	}
	return c.cursorReply(out, db+"."+coll, "nextBatch", docs, batch, false), nil
}

func (c *floorConn) killCursors(out []byte, body bsoncore.Document) []byte {
	arr, _ := body.Lookup("cursors").ArrayOK()
	vals, _ := arr.Values()
	var killed []int64
	c.f.curMu.Lock()
	for _, v := range vals {
		if id, ok := v.Int64OK(); ok {
			if _, ok := c.f.cursors[id]; ok {
				delete(c.f.cursors, id)
				killed = append(killed, id)
			}
		}
	}
	c.f.curMu.Unlock()
	start, a := bsoncore.AppendArrayElementStart(out, "cursorsKilled")
	for i, id := range killed {
		a = bsoncore.AppendInt64Element(a, arrayIndex(i), id)
	}
	out, _ = bsoncore.AppendArrayEnd(a, start)
	return out
}

func (c *floorConn) count(out []byte, ns string, body bsoncore.Document) ([]byte, error) {
	filter, _ := body.Lookup("query").DocumentOK()
	sel, err := parseSelector(filter)
	if err != nil {
		return out, err
	}
	c.f.mu.RLock()
	var n int
	if coll := c.f.coll(ns, false); coll != nil {
		if sel.all {
			n = len(coll.docs)
		} else {
			n = len(coll.matching(nil, sel, 0))
		}
	}
	c.f.mu.RUnlock()
	return bsoncore.AppendInt64Element(out, "n", int64(n)), nil
}

// pointID returns the _id of a statement's {_id: s} filter.
func pointID(stmt bsoncore.Document) (string, error) {
	q, _ := stmt.Lookup("q").DocumentOK()
	sel, err := parseSelector(q)
	if err != nil {
		return "", err
	}
	if !sel.point {
		return "", badValue("writes need an {_id: s} filter, got %s", q)
	}
	return sel.id, nil
}

func (c *floorConn) update(out []byte, ns string, stmts []bsoncore.Document) ([]byte, error) {
	var matched, upserted int64
	for _, st := range stmts {
		id, err := pointID(st)
		if err != nil {
			return out, err
		}
		u, ok := st.Lookup("u").DocumentOK()
		if !ok {
			return out, badValue("update needs a document u")
		}
		upsert, _ := st.Lookup("upsert").BooleanOK()
		set, isSet, err := setOperator(u)
		if err != nil {
			return out, err
		}
		c.f.mu.Lock()
		coll := c.f.coll(ns, true)
		cur, exists := coll.docs[id]
		var next bsoncore.Document
		switch {
		case !exists && !upsert:
		case isSet:
			base := cur
			if !exists {
				base = bsoncore.NewDocumentBuilder().AppendString("_id", id).Build()
			}
			next, err = applySet(base, set)
		default:
			next, err = withID(u, id)
		}
		if err == nil && next != nil {
			coll.docs[id] = next
			if exists {
				matched++
			} else {
				coll.ids.insert(id)
				upserted++
			}
		}
		c.f.mu.Unlock()
		if err != nil {
			return out, err
		}
	}
	out = bsoncore.AppendInt64Element(out, "n", matched+upserted)
	return bsoncore.AppendInt64Element(out, "nModified", matched), nil
}

// setOperator recognises u = {$set: {...}}; any other operator is refused.
func setOperator(u bsoncore.Document) (set bsoncore.Document, isSet bool, err error) {
	first, err := u.IndexErr(0)
	if err != nil || !strings.HasPrefix(first.Key(), "$") {
		return nil, false, nil
	}
	elems, _ := u.Elements()
	if len(elems) != 1 || first.Key() != "$set" {
		return nil, false, badValue("update %s: only $set", u)
	}
	set, ok := first.Value().DocumentOK()
	if !ok {
		return nil, false, badValue("$set needs a document")
	}
	return set, true, nil
}

// applySet returns a copy of doc with set's top-level fields replaced or
// appended.
func applySet(doc, set bsoncore.Document) (bsoncore.Document, error) {
	setElems, err := set.Elements()
	if err != nil {
		return nil, err
	}
	elems, err := doc.Elements()
	if err != nil {
		return nil, err
	}
	used := make([]bool, len(setElems))
	start, out := bsoncore.AppendDocumentStart(nil)
	for _, el := range elems {
		replaced := false
		for i, s := range setElems {
			if s.Key() == el.Key() {
				out, used[i], replaced = append(out, s...), true, true
				break
			}
		}
		if !replaced {
			out = append(out, el...)
		}
	}
	for i, s := range setElems {
		if !used[i] {
			out = append(out, s...)
		}
	}
	return bsoncore.AppendDocumentEnd(out, start)
}

// withID returns a stored copy of replacement u, with the filter's _id
// first when u has none.
func withID(u bsoncore.Document, id string) (bsoncore.Document, error) {
	if got, err := stringID(u); err == nil {
		if got != id {
			return nil, &floorError{66, "ImmutableField", "the replacement would change _id"}
		}
		return append(bsoncore.Document(nil), u...), nil
	}
	elems, err := u.Elements()
	if err != nil {
		return nil, err
	}
	start, out := bsoncore.AppendDocumentStart(nil)
	out = bsoncore.AppendStringElement(out, "_id", id)
	for _, el := range elems {
		out = append(out, el...)
	}
	return bsoncore.AppendDocumentEnd(out, start)
}

func (c *floorConn) delete(out []byte, ns string, stmts []bsoncore.Document) ([]byte, error) {
	var n int64
	for _, st := range stmts {
		id, err := pointID(st)
		if err != nil {
			return out, err
		}
		c.f.mu.Lock()
		if coll := c.f.coll(ns, false); coll != nil {
			if _, ok := coll.docs[id]; ok {
				delete(coll.docs, id)
				coll.ids.remove(id)
				n++
			}
		}
		c.f.mu.Unlock()
	}
	return bsoncore.AppendInt64Element(out, "n", n), nil
}

// sortedKeys keeps strings in order in chunks of at most maxChunk, so an
// insert moves at most a chunk's worth of entries instead of the whole set
// (a flat sorted slice of 10^5 keys would memmove 1.6 MB per insert).
type sortedKeys struct {
	chunks [][]string
}

const maxChunk = 512

// chunkFor is the index of the chunk k belongs in: the last whose first
// key is <= k (0 when k sorts first).
func (s *sortedKeys) chunkFor(k string) int {
	i := sort.Search(len(s.chunks), func(i int) bool { return s.chunks[i][0] > k })
	return max(i-1, 0)
}

func (s *sortedKeys) insert(k string) {
	if len(s.chunks) == 0 {
		s.chunks = [][]string{{k}}
		return
	}
	ci := s.chunkFor(k)
	c := s.chunks[ci]
	i := sort.SearchStrings(c, k)
	if i < len(c) && c[i] == k {
		return
	}
	c = append(c, "")
	copy(c[i+1:], c[i:])
	c[i] = k
	if len(c) > maxChunk {
		half := append([]string(nil), c[len(c)/2:]...)
		c = c[: len(c)/2 : len(c)/2]
		s.chunks = append(s.chunks, nil)
		copy(s.chunks[ci+2:], s.chunks[ci+1:])
		s.chunks[ci+1] = half
	}
	s.chunks[ci] = c
}

func (s *sortedKeys) remove(k string) {
	if len(s.chunks) == 0 {
		return
	}
	ci := s.chunkFor(k)
	c := s.chunks[ci]
	i := sort.SearchStrings(c, k)
	if i == len(c) || c[i] != k {
		return
	}
	c = append(c[:i], c[i+1:]...)
	if len(c) == 0 {
		s.chunks = append(s.chunks[:ci], s.chunks[ci+1:]...)
		return
	}
	s.chunks[ci] = c
}

// ascend calls fn for each key >= from in order until fn returns false.
func (s *sortedKeys) ascend(from string, fn func(string) bool) {
	if len(s.chunks) == 0 {
		return
	}
	ci := s.chunkFor(from)
	i := sort.SearchStrings(s.chunks[ci], from)
	for ; ci < len(s.chunks); ci, i = ci+1, 0 {
		for _, k := range s.chunks[ci][i:] {
			if !fn(k) {
				return
			}
		}
	}
}
