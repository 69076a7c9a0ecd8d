package repl

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairndb/cairn/internal/hoptrace"
	"github.com/cairndb/cairn/internal/tlsconn"
)

// The TCP transport's wire format. A connection opens with a preamble —
// the 4 bytes "CRft", a version byte (2), the sender's and the receiver's
// member ids as 8 bytes big-endian each, and the sender's address (a
// 2-byte big-endian length and that many bytes, "host:port", where its
// peers reach it) — then carries frames, each a 4-byte big-endian length
// and that many bytes of one marshalled raftpb.Message. Connections are
// one-way: a member dials each peer it sends to and reads from the
// connections its peers dialled. The receiver's id lets a member that
// holds no state yet learn which member it is (a replica set member
// added by its primary); the address lets it answer.
var tcpMagic = [5]byte{'C', 'R', 'f', 't', 2}

// MemberStreamMagic is how a member's connection begins: a server that
// takes members and clients on one port tells them apart by a
// connection's first four bytes (a MongoDB message begins with its length,
// little-endian, which these bytes would make over 1.9 GB).
const MemberStreamMagic = "CRft"

// Preamble is what a member's connection opens with.
type Preamble struct {
	From, To uint64
	Addr     string
}

// ReadPreamble reads a connection's preamble.
func ReadPreamble(r io.Reader) (Preamble, error) {
	var pre [len(tcpMagic) + 18]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return Preamble{}, err
	}
	if [5]byte(pre[:5]) != tcpMagic {
		return Preamble{}, errors.New("repl: not a Raft stream of this version")
	}
	p := Preamble{From: binary.BigEndian.Uint64(pre[5:]), To: binary.BigEndian.Uint64(pre[13:])}
	addr := make([]byte, binary.BigEndian.Uint16(pre[21:]))
	if _, err := io.ReadFull(r, addr); err != nil {
		return Preamble{}, err
	}
	p.Addr = string(addr)
	return p, nil
}

func appendPreamble(dst []byte, p Preamble) []byte {
	dst = append(dst, tcpMagic[:]...)
	dst = binary.BigEndian.AppendUint64(dst, p.From)
	dst = binary.BigEndian.AppendUint64(dst, p.To)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(p.Addr)))
	return append(dst, p.Addr...)
}

const (
	// maxFrame bounds one message (a snapshot included, until snapshots are
	// streamed): a larger length is a corrupt or hostile stream. One
	// commit group is one entry, and Raft sends an entry larger than
	// MaxSizePerMsg alone: a 48 MB insert command (the wire's largest
	// message) with its oplog entries is near 100 MB, and a message over
	// the bound is never delivered, so the write would never commit.
	maxFrame     = 256 << 20
	sendQueueLen = 1024
	dialTimeout  = time.Second
	writeTimeout = 5 * time.Second
	maxBackoff   = time.Second
	// maxDirect bounds a frame Send writes itself ("Frames written by
	// the sending goroutine"), and directTimeout how long such a write
	// may block: a peer whose socket takes neither in time has its
	// frames queued to the sender goroutine as before.
	maxDirect     = 64 << 10
	directTimeout = 20 * time.Millisecond
)

// TCPTransport carries Raft messages over TCP. Each peer has a queue and a
// sender goroutine that dials it, reconnects after any error with a
// growing pause, and drops what it cannot send ("Transport may lose":
// Raft retransmits).
type TCPTransport struct {
	id   uint64
	addr string       // advertised in the preamble
	ln   net.Listener // nil: connections come through ServeConn
	recv chan *pb.Message
	key  atomic.Pointer[MemberKey]  // nil: members do not authenticate (memberauth.go)
	tls  atomic.Pointer[tls.Config] // nil: dial peers without TLS (SetTLS)

	mu     sync.Mutex
	peers  map[uint64]*tcpPeer
	conns  map[net.Conn]struct{}
	closed bool
	stopc  chan struct{}
	wg     sync.WaitGroup
	// streamer streams snapshots after their MsgSnap (nil: a snapshot
	// travels inside its message).
	streamer SnapshotStreamer
	// direct counts the frames Send wrote itself.
	direct atomic.Uint64
	// frame is the buffer Send encodes a frame it may write itself into,
	// kept while no queued frame holds it (under mu).
	frame []byte
}

type tcpPeer struct {
	id    uint64
	addr  string
	queue chan outFrame
	// queued counts the frames put in queue and not yet written (or
	// dropped) by the sender: Send writes a frame itself only when none
	// is, so frames leave in the order they were sent.
	queued atomic.Int64
	// wmu is held by whoever writes to c: the sender goroutine (which
	// dials, and flushes w before it lets go) or Send.
	wmu sync.Mutex
	c   net.Conn      // nil: not connected
	w   *bufio.Writer // c's, empty whenever wmu is free
}

// outFrame is one queued message; snap, when set, is the descriptor of a
// snapshot streamed right after it.
type outFrame struct {
	b    []byte
	snap []byte
	at   int64 // when it was queued (package hoptrace; 0 otherwise)
}

// SetSnapshotStreamer makes the transport stream snapshots: after a
// MsgSnap frame come the chunks st.WriteSnapshot writes (each a 4-byte
// big-endian length and the bytes, at most 1 MiB), ended by an empty
// chunk; the receiver hands them to st.ReadSnapshot before it delivers
// the message, and drops the message if that fails.
func (t *TCPTransport) SetSnapshotStreamer(st SnapshotStreamer) {
	t.mu.Lock()
	t.streamer = st
	t.mu.Unlock()
}

func (t *TCPTransport) snapshotStreamer() SnapshotStreamer {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.streamer
}

// ListenTCP starts member id's transport listening on addr.
func ListenTCP(id uint64, addr string) (*TCPTransport, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	t := NewTCPTransport(id, ln.Addr().String())
	t.ln = ln
	t.wg.Add(1)
	go t.accept()
	return t, nil
}

// NewTCPTransport returns member id's transport with no listener of its
// own: its owner hands it the connections peers open (ServeConn), as a
// server that takes members on its client port does. advertise is where
// peers reach this member, sent in every preamble.
func NewTCPTransport(id uint64, advertise string) *TCPTransport {
	return &TCPTransport{
		id: id, addr: advertise, recv: make(chan *pb.Message, inboxSize),
		peers: map[uint64]*tcpPeer{}, conns: map[net.Conn]struct{}{}, stopc: make(chan struct{}),
	}
}

// Addr is the address the transport advertises.
func (t *TCPTransport) Addr() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.addr
}

// SetMemberKey makes every connection authenticate with k (memberauth.go)
// before it carries a frame. Call it before the transport is used.
func (t *TCPTransport) SetMemberKey(k *MemberKey) { t.key.Store(k) }

// SetTLS makes the transport dial its peers with TLS, cfg being a
// member's client configuration (tlsconn.Member): under preferTLS and
// requireTLS, as MongoDB's members connect to each other. The receiving
// side's TLS is its server's (server.Options.TLS); nil dials plain.
func (t *TCPTransport) SetTLS(cfg *tls.Config) { t.tls.Store(cfg) }

// SetAddr changes the address advertised to peers dialled from now on
// (a member learns its own from its replica set's configuration).
func (t *TCPTransport) SetAddr(addr string) {
	t.mu.Lock()
	t.addr = addr
	t.mu.Unlock()
}

// ServeConn reads the frames of a peer's connection whose preamble p was
// read already from r (c's buffered reader), until the connection ends or
// the transport closes. A peer the transport has no address for is
// reached back at the preamble's. With a member key, the caller has
// authenticated c already (MemberKey.Accept), before acting on p.
func (t *TCPTransport) ServeConn(c net.Conn, r *bufio.Reader, p Preamble) error {
	if !t.track(c) {
		return errors.New("repl: transport closed")
	}
	defer t.untrack(c)
	if p.To != t.id {
		return fmt.Errorf("repl: a connection for member %d reached member %d", p.To, t.id)
	}
	if p.Addr != "" {
		t.AddPeer(p.From, p.Addr)
	}
	return t.readFrames(r, p.From)
}

// AddPeer tells the transport where member id listens.
func (t *TCPTransport) AddPeer(id uint64, addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || t.peers[id] != nil {
		return
	}
	p := &tcpPeer{id: id, addr: addr, queue: make(chan outFrame, sendQueueLen)}
	t.peers[id] = p
	t.wg.Add(1)
	go t.send(p)
}

// Recv implements Transport.
func (t *TCPTransport) Recv() <-chan *pb.Message { return t.recv }

// Send implements Transport: messages to an unknown peer, or beyond a full
// queue, are dropped.
func (t *TCPTransport) Send(msgs []*pb.Message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range msgs {
		p := t.peers[m.GetTo()]
		if p == nil {
			continue
		}
		// The frame is the length and the message marshalled after it,
		// in one buffer: no second copy of the entries it carries.
		size := proto.Size(m)
		if size > maxFrame {
			continue
		}
		// A frame Send may write itself is encoded into t.frame, which it
		// keeps when the write is done ("Frame buffers reused after their
		// write"); one it queues gets a buffer of its own.
		direct := size+4 <= maxDirect && !(m.GetType() == pb.MsgSnap && t.streamer != nil)
		reuse := direct && cap(t.frame) >= 4+size
		buf := t.frame[:0]
		if !reuse {
			buf = make([]byte, 0, 4+size)
		}
		buf = append(buf, 0, 0, 0, 0)
		b, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(buf, m)
		if err != nil || len(b) != 4+size {
			continue
		}
		binary.BigEndian.PutUint32(b, uint32(size))
		frame := outFrame{b: b, at: hoptrace.Now()}
		if m.GetType() == pb.MsgSnap && t.streamer != nil {
			frame.snap = m.GetSnapshot().GetData()
		}
		if direct && t.writeDirect(p, b) {
			if hoptrace.Enabled {
				hoptrace.Since(hoptrace.NetSend, frame.at)
			}
			t.frame = b[:0] // written: the kernel has its bytes
			continue
		}
		if reuse {
			t.frame = nil // queued: the sender owns b now
		}
		p.queued.Add(1)
		select {
		case p.queue <- frame:
		default:
			p.queued.Add(-1)
		}
	}
}

// writeDirect writes frame b to p's connection from the calling goroutine
// (Send's, holding t.mu) when nothing is queued for p and its sender is
// not writing ("Frames written by the sending goroutine"): a member's
// acknowledgement or a leader's append then leaves without waking the
// sender goroutine. It reports whether b is dealt with: written, or lost
// with a connection broken by a partial write (the transport may lose;
// Raft retransmits). False: the caller queues b (the connection is down
// or busy, or the write did not start in time).
func (t *TCPTransport) writeDirect(p *tcpPeer, b []byte) bool {
	if p.queued.Load() != 0 || !p.wmu.TryLock() {
		return false
	}
	defer p.wmu.Unlock()
	if p.c == nil || p.queued.Load() != 0 {
		return false
	}
	p.c.SetWriteDeadline(time.Now().Add(directTimeout))
	n, err := p.c.Write(b)
	switch {
	case err == nil:
		t.direct.Add(1)
		return true
	case n == 0:
		return false // nothing written: the sender tries, with its own deadline
	default:
		// Part of a frame is on the stream: the receiver would misread
		// what follows, so the connection ends (the sender redials).
		// Send holds t.mu.
		delete(t.conns, p.c)
		p.c.Close()
		p.c, p.w = nil, nil
		return true
	}
}

// Close implements Transport: it stops listening, closes every connection
// and waits for the transport's goroutines.
func (t *TCPTransport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	close(t.stopc)
	var err error
	if t.ln != nil {
		err = t.ln.Close()
	}
	for c := range t.conns {
		c.Close()
	}
	t.mu.Unlock()
	t.wg.Wait()
	return err
}

// track registers a connection so Close can end it; false if closed.
func (t *TCPTransport) track(c net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		c.Close()
		return false
	}
	t.conns[c] = struct{}{}
	return true
}

func (t *TCPTransport) untrack(c net.Conn) {
	t.mu.Lock()
	delete(t.conns, c)
	t.mu.Unlock()
	c.Close()
}

func (t *TCPTransport) accept() {
	defer t.wg.Done()
	for {
		c, err := t.ln.Accept()
		if err != nil {
			return // listener closed
		}
		if !t.track(c) {
			return
		}
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			defer t.untrack(c)
			t.read(c) // a broken or foreign stream just ends the connection
		}()
	}
}

// read reads one connection's preamble and frames into recv.
func (t *TCPTransport) read(c net.Conn) error {
	r := bufio.NewReaderSize(c, 64<<10)
	p, err := ReadPreamble(r)
	if err != nil {
		return err
	}
	if p.To != t.id {
		return fmt.Errorf("repl: a connection for member %d reached member %d", p.To, t.id)
	}
	if err := t.key.Load().Accept(c, r, p); err != nil {
		return err
	}
	if p.Addr != "" {
		t.AddPeer(p.From, p.Addr)
	}
	return t.readFrames(r, p.From)
}

func (t *TCPTransport) readFrames(r *bufio.Reader, from uint64) error {
	var hdr [4]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return err
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n > maxFrame {
			return fmt.Errorf("repl: frame of %d bytes from member %d", n, from)
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			return err
		}
		m := &pb.Message{}
		if err := proto.Unmarshal(body, m); err != nil {
			return err
		}
		if m.GetFrom() != from {
			return fmt.Errorf("repl: message from %d on member %d's connection", m.GetFrom(), from)
		}
		if st := t.snapshotStreamer(); st != nil && m.GetType() == pb.MsgSnap {
			cr := &chunkReader{r: r}
			err := st.ReadSnapshot(m.GetSnapshot().GetData(), cr)
			if derr := cr.drain(); derr != nil {
				return derr
			}
			if err != nil {
				continue // dropped: the leader sends the snapshot again
			}
		}
		select {
		case t.recv <- m:
		case <-t.stopc:
			return nil
		}
	}
}

// send is peer p's sender: it writes queued frames, dialling when it has
// no connection, and drops a frame it cannot write.
func (t *TCPTransport) send(p *tcpPeer) {
	defer t.wg.Done()
	backoff := 10 * time.Millisecond
	var retryAt time.Time
	defer func() {
		p.wmu.Lock()
		if p.c != nil {
			t.untrack(p.c)
			p.c, p.w = nil, nil
		}
		p.wmu.Unlock()
	}()
	for {
		var frame outFrame
		select {
		case frame = <-p.queue:
		case <-t.stopc:
			return
		}
		p.wmu.Lock()
		written := t.sendQueued(p, frame, &retryAt, &backoff)
		// Counted out only now, under wmu: Send writes a frame itself only
		// once every frame queued before it is written or dropped.
		p.queued.Add(-int64(written))
		p.wmu.Unlock()
	}
}

// sendQueued writes frame and what is queued behind it to p, dialling when
// p has no connection, and flushes once; it returns how many frames it
// took from the queue (frame included), written or dropped. Under p.wmu.
func (t *TCPTransport) sendQueued(p *tcpPeer, frame outFrame, retryAt *time.Time, backoff *time.Duration) int {
	if p.c == nil {
		if time.Now().Before(*retryAt) {
			return 1 // peer down: drop until the next try
		}
		c, err := t.dial(p.id, p.addr)
		if err != nil {
			*retryAt = time.Now().Add(*backoff)
			*backoff = min(2**backoff, maxBackoff)
			return 1
		}
		*backoff = 10 * time.Millisecond
		p.c, p.w = c, bufio.NewWriterSize(c, 64<<10)
	}
	taken := 1
	err := t.writeFrame(p.c, p.w, frame)
	var sent []int64 // the frames' queue times, for package hoptrace
	if hoptrace.Enabled {
		sent = append(sent, frame.at)
	}
	// Write what is queued behind this frame too, then flush once.
	for err == nil && len(p.queue) > 0 {
		f := <-p.queue
		taken++
		err = t.writeFrame(p.c, p.w, f)
		if hoptrace.Enabled {
			sent = append(sent, f.at)
		}
	}
	if err == nil {
		err = p.w.Flush()
	}
	if hoptrace.Enabled && err == nil {
		for _, at := range sent {
			hoptrace.Since(hoptrace.NetSend, at)
		}
	}
	if err != nil {
		t.untrack(p.c)
		p.c, p.w = nil, nil
	}
	return taken
}

// writeFrame writes one frame and, after a MsgSnap, its snapshot's
// stream; every write gets its own deadline, so a long stream that keeps
// moving does not time out.
func (t *TCPTransport) writeFrame(c net.Conn, w *bufio.Writer, f outFrame) error {
	c.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := w.Write(f.b); err != nil || f.snap == nil {
		return err
	}
	st := t.snapshotStreamer()
	cw := chunkWriter{w: deadlineWriter{c: c, w: w}}
	if err := st.WriteSnapshot(f.snap, cw); err != nil {
		// The receiver cannot tell a cut stream from a whole one but by
		// its end chunk: break the connection instead of ending it.
		return fmt.Errorf("repl: streaming a snapshot: %w", err)
	}
	return cw.Close()
}

// deadlineWriter renews the connection's write deadline before each write.
type deadlineWriter struct {
	c net.Conn
	w io.Writer
}

func (d deadlineWriter) Write(p []byte) (int, error) {
	d.c.SetWriteDeadline(time.Now().Add(writeTimeout))
	return d.w.Write(p)
}

func (t *TCPTransport) dial(to uint64, addr string) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, dialTimeout)
	if err != nil {
		return nil, err
	}
	if cfg := t.tls.Load(); cfg != nil {
		// The handshake runs untracked: Close does not wait on it longer
		// than writeTimeout.
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		c, err = tlsconn.Dial(ctx, c, cfg, addr)
		cancel()
		if err != nil {
			return nil, err
		}
	}
	if !t.track(c) {
		return nil, errors.New("repl: transport closed")
	}
	pre := Preamble{From: t.id, To: to, Addr: t.Addr()}
	c.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := c.Write(appendPreamble(nil, pre)); err != nil {
		t.untrack(c)
		return nil, err
	}
	if err := t.key.Load().prove(c, pre); err != nil {
		t.untrack(c)
		return nil, err
	}
	return c, nil
}
