package cairn_test

import (
	"bytes"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cairndb/cairn/internal/repl"
)

// netProxy is a replica set's network as a test controls it: one TCP
// proxy per member, listening on a second loopback address (proxyIP) at
// the member's own port. The set's configuration names the proxies as the
// members' hosts, so every connection to a member passes through one — a
// client's (the driver discovers the hosts from hello) and a member's Raft
// stream alike — while each member still takes its host for its own
// (package replset's isSelf: a loopback address and its own port).
//
// Members and clients share a port; the proxy tells them apart as the
// server does, by a connection's first bytes (repl.MemberStreamMagic), and
// learns which member a Raft stream comes from by its preamble's sender
// address (a member that does not know its own yet, while it joins, is
// never cut). Partition severs the streams between two groups of members
// and refuses new ones, in both directions, until Heal; clients still
// reach every member. That is a network partition, not SIGSTOP's pause: a
// cut-off primary keeps running and answering its clients until it learns
// it lost its quorum (Raft's CheckQuorum) and steps down, while the
// others elect a new primary.
type netProxy struct {
	hosts   []string // member i's address in the configuration: its proxy
	targets []string // member i's own address
	lns     []net.Listener

	mu    sync.Mutex
	cut   map[[2]int]bool // pairs {i, j}, i < j, whose streams are severed
	conns map[*proxied]struct{}
	wg    sync.WaitGroup
}

// proxyIP is the loopback address the proxies listen on (Linux routes all
// of 127.0.0.0/8 to the loopback interface).
const proxyIP = "127.0.0.2"

// proxied is one connection through a proxy: from is the member whose
// Raft stream it is (-1: a client, or not yet known; under netProxy.mu),
// to the member it reaches; out is nil until the proxy dials the member.
type proxied struct {
	from, to int
	in       net.Conn
	mu       sync.Mutex
	out      net.Conn
}

// close closes both sides (again: no harm).
func (p *proxied) close() {
	_ = p.in.Close()
	p.mu.Lock()
	out := p.out
	p.mu.Unlock()
	if out != nil {
		_ = out.Close()
	}
}

// startNetProxy starts a proxy in front of each member port (members
// listen on 127.0.0.1). It returns nil when proxyIP cannot be bound (not
// Linux), so a caller may run without partitions.
func startNetProxy(t *testing.T, ports []int) *netProxy {
	t.Helper()
	n := &netProxy{cut: map[[2]int]bool{}, conns: map[*proxied]struct{}{}}
	for _, p := range ports {
		ln, err := net.Listen("tcp", net.JoinHostPort(proxyIP, strconv.Itoa(p)))
		if err != nil {
			for _, l := range n.lns {
				_ = l.Close()
			}
			t.Logf("no partitions: cannot listen on %s: %v", proxyIP, err)
			return nil
		}
		n.lns = append(n.lns, ln)
		n.hosts = append(n.hosts, ln.Addr().String())
		n.targets = append(n.targets, net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	}
	for i, ln := range n.lns {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			for {
				c, err := ln.Accept()
				if err != nil {
					return // closed
				}
				n.wg.Add(1)
				go func() {
					defer n.wg.Done()
					n.serve(i, c)
				}()
			}
		}()
	}
	t.Cleanup(n.close)
	return n
}

// serve forwards one connection to member to, unless it is a Raft stream
// across a cut.
func (n *netProxy) serve(to int, in net.Conn) {
	p := &proxied{from: -1, to: to, in: in}
	n.mu.Lock()
	if n.conns == nil { // closed
		n.mu.Unlock()
		_ = in.Close()
		return
	}
	n.conns[p] = struct{}{} // close ends it, even while it is classified
	n.mu.Unlock()
	defer func() {
		p.close()
		n.mu.Lock()
		delete(n.conns, p)
		n.mu.Unlock()
	}()
	var head bytes.Buffer // what was read to classify the connection
	from, err := n.classify(io.TeeReader(in, &head))
	if err != nil {
		return
	}
	out, err := net.DialTimeout("tcp", n.targets[to], time.Second)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.out = out
	p.mu.Unlock()
	n.mu.Lock()
	p.from = from
	live := n.conns != nil && !n.cutLocked(from, to) // not closed, not cut
	n.mu.Unlock()
	if !live {
		return // the deferred close closes out too
	}
	if _, err := out.Write(head.Bytes()); err != nil {
		return
	}
	var forwarding sync.WaitGroup
	forwarding.Add(2)
	go func() { defer forwarding.Done(); _, _ = io.Copy(out, in); p.close() }()
	go func() { defer forwarding.Done(); _, _ = io.Copy(in, out); p.close() }()
	forwarding.Wait()
}

// classify reads a connection's first bytes: a member's Raft stream
// (repl.MemberStreamMagic) is read up to the end of its preamble, and
// from is the member whose address it names; anything else is a client
// (-1), of which only the first bytes are read.
func (n *netProxy) classify(r io.Reader) (from int, err error) {
	var first [len(repl.MemberStreamMagic)]byte
	if _, err := io.ReadFull(r, first[:]); err != nil {
		return -1, err
	}
	if string(first[:]) != repl.MemberStreamMagic {
		return -1, nil
	}
	p, err := repl.ReadPreamble(io.MultiReader(bytes.NewReader(first[:]), r))
	if err != nil {
		return -1, err
	}
	for i, h := range n.hosts {
		if h == p.Addr {
			return i, nil
		}
	}
	return -1, nil // a member that does not know its address yet (joining): not cut
}

// severed reports whether the streams between members a and b are cut.
func (n *netProxy) severed(a, b int) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cutLocked(a, b)
}

func (n *netProxy) cutLocked(a, b int) bool {
	if a < 0 || b < 0 || a == b {
		return false // a client, or a member's stream to itself
	}
	return n.cut[[2]int{min(a, b), max(a, b)}]
}

// Partition severs the streams between every member of a and every
// member of b, open ones included, until Heal.
func (n *netProxy) Partition(a, b []int) {
	n.mu.Lock()
	for _, i := range a {
		for _, j := range b {
			if i != j {
				n.cut[[2]int{min(i, j), max(i, j)}] = true
			}
		}
	}
	var sever []*proxied
	for p := range n.conns {
		if n.cutLocked(p.from, p.to) {
			sever = append(sever, p)
		}
	}
	n.mu.Unlock()
	for _, p := range sever {
		p.close()
	}
}

// Heal lets every member reach every other again (the members' senders
// redial on their own).
func (n *netProxy) Heal() {
	n.mu.Lock()
	clear(n.cut)
	n.mu.Unlock()
}

// close stops the proxies and every connection through them.
func (n *netProxy) close() {
	for _, ln := range n.lns {
		_ = ln.Close()
	}
	n.mu.Lock()
	conns := n.conns
	n.conns = nil
	n.mu.Unlock()
	for p := range conns {
		p.close()
	}
	n.wg.Wait()
}

// TestNetProxy: a client's bytes pass the proxy both ways, partitioned or
// not; a Raft stream (its preamble naming another member's proxy) passes
// until a partition between the two members, which severs it and refuses
// a new one, and passes again after Heal.
func TestNetProxy(t *testing.T) {
	// Two echo servers stand for members 0 and 1.
	var ports []int
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ln.Close() })
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() { _, _ = io.Copy(c, c); _ = c.Close() }()
			}
		}()
	}
	n := startNetProxy(t, ports)
	if n == nil {
		t.Skip("cannot listen on " + proxyIP + ": partitions need a second loopback address (Linux has them)")
	}
	// raftStream dials member to's proxy as member from would.
	raftStream := func(from, to int) net.Conn {
		c, err := net.Dial("tcp", n.hosts[to])
		if err != nil {
			t.Fatal(err)
		}
		pre := []byte(repl.MemberStreamMagic + "\x02")
		pre = append(pre, make([]byte, 16)...)
		pre = append(pre, byte(len(n.hosts[from])>>8), byte(len(n.hosts[from])))
		pre = append(pre, n.hosts[from]...)
		if _, err := c.Write(pre); err != nil {
			t.Fatal(err)
		}
		return c
	}
	client := func(to int) net.Conn {
		c, err := net.Dial("tcp", n.hosts[to])
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// echoes reports whether msg comes back on c (after what c's proxy
	// forwarded first: a preamble, echoed too).
	echoes := func(c net.Conn, skip int, msg string) bool {
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte(msg)); err != nil {
			return false
		}
		got := make([]byte, skip+len(msg))
		if _, err := io.ReadFull(c, got); err != nil {
			return false
		}
		return string(got[skip:]) == msg
	}
	preamble := len(repl.MemberStreamMagic) + 1 + 16 + 2 + len(n.hosts[1])
	s := raftStream(1, 0)
	c := client(0)
	if !echoes(s, preamble, "frame") || !echoes(c, 0, "hello") {
		t.Fatal("the proxy does not forward before a partition")
	}
	n.Partition([]int{0}, []int{1})
	if echoes(s, 0, "frame") {
		t.Error("a Raft stream across the partition still passes")
	}
	if echoes(raftStream(1, 0), preamble, "frame") {
		t.Error("a new Raft stream across the partition passes")
	}
	if !echoes(c, 0, "again") || !echoes(client(0), 0, "hello") {
		t.Error("a client's connection to a partitioned member is cut")
	}
	n.Heal()
	if !echoes(raftStream(1, 0), preamble, "frame") {
		t.Error("a Raft stream does not pass after Heal")
	}
}
