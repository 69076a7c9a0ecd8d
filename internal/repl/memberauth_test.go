package repl

import (
	"net"
	"testing"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
)

func memberKey(t *testing.T, secret string) *MemberKey {
	t.Helper()
	k, err := NewMemberKey([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestMemberAuth: members holding the same key exchange messages; a sender
// with another key, or with none, gets nothing delivered, and a receiver
// with another key or none receives nothing from a keyed sender.
func TestMemberAuth(t *testing.T) {
	for _, tc := range []struct {
		name           string
		sender, recver string // "" is no key
		delivered      bool
	}{
		{"same key", "c2VjcmV0a2V5", "c2VjcmV0a2V5", true},
		{"no keys", "", "", true},
		{"other key", "b3RoZXJrZXk=", "c2VjcmV0a2V5", false},
		{"sender without key", "", "c2VjcmV0a2V5", false},
		{"receiver without key", "c2VjcmV0a2V5", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ListenTCP(2, "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if tc.recver != "" {
				b.SetMemberKey(memberKey(t, tc.recver))
			}
			a := NewTCPTransport(1, "127.0.0.1:1")
			defer a.Close()
			if tc.sender != "" {
				a.SetMemberKey(memberKey(t, tc.sender))
			}
			a.AddPeer(2, b.Addr())
			var got uint64
			deadline := time.Now().Add(time.Second)
			if tc.delivered {
				deadline = time.Now().Add(10 * time.Second)
			}
			for term := uint64(1); got == 0 && time.Now().Before(deadline); term++ {
				a.Send([]*pb.Message{heartbeat(1, 2, term)})
				got = recvTerm(b, 50*time.Millisecond)
			}
			if delivered := got != 0; delivered != tc.delivered {
				t.Fatalf("delivered %v, want %v", delivered, tc.delivered)
			}
		})
	}
}

// TestMemberAuthRefusesReplay: a handshake recorded from one connection
// does not authenticate another (the acceptor's nonce is fresh), and a
// connection that sends frames without a handshake delivers nothing.
func TestMemberAuthRefusesReplay(t *testing.T) {
	key := memberKey(t, "c2VjcmV0a2V5")
	b, err := ListenTCP(2, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.SetMemberKey(key)
	pre := Preamble{From: 1, To: 2}
	// An honest dialer's handshake, recorded.
	c, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	c.Write(appendPreamble(nil, pre))
	if err := key.prove(c, pre); err != nil {
		t.Fatalf("honest handshake: %v", err)
	}
	c.Close()
	// The same dialer message replayed on a new connection, whatever the
	// acceptor's nonce: it must fail.
	nA := make([]byte, authNonceLen)
	nD := make([]byte, authNonceLen)
	replayed := append(append([]byte{}, nD...), key.tag("dialer", pre, nA, nD)...)
	c2, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.Write(appendPreamble(nil, pre))
	c2.Write(replayed)
	c2.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, authNonceLen+authTagLen)
	n, _ := c2.Read(buf)
	for n < len(buf) {
		m, err := c2.Read(buf[n:])
		if err != nil {
			break
		}
		n += m
	}
	if n > authNonceLen {
		t.Fatalf("the acceptor answered a replayed handshake (%d bytes)", n)
	}
	if got := recvTerm(b, 50*time.Millisecond); got != 0 {
		t.Fatalf("delivered a message of term %d", got)
	}
}
