package repl

import (
	"bufio"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"time"
)

// Member authentication (MongoDB's keyFile): with a MemberKey, a member's
// connection carries no frame until both ends proved they hold the key.
// After the preamble, a challenge-response of HMAC-SHA-256 tags (the
// standard library's crypto/hmac; nothing of our own) binds the key, both
// ends' fresh nonces and the preamble (so the ids and the address cannot
// be swapped):
//
//	acceptor -> dialer   nA (32 random bytes)
//	dialer   -> acceptor nD (32 random bytes), HMAC(k, "dialer"   | preamble | nA | nD)
//	acceptor -> dialer   HMAC(k, "acceptor" | preamble | nA | nD)
//
// Each side checks the other's tag with hmac.Equal (constant time) and
// ends the connection on a mismatch, so a dialer without the key sends
// nothing Raft reads, and a dialer never sends to an impostor. A fresh nA
// per connection makes a recorded handshake useless on another one. k is
// derived from the key file's key with HKDF-SHA-256, so the transport's
// key is not the password the internal user's SCRAM credentials come from.

const (
	authNonceLen = 32
	authTagLen   = sha256.Size
	// authTimeout bounds the handshake: a peer that stalls in it holds a
	// connection for no longer.
	authTimeout = 5 * time.Second
)

// ErrMemberAuth is a failed member handshake.
var ErrMemberAuth = errors.New("repl: member authentication failed")

// MemberKey authenticates members to each other. The zero value is not
// useful; nil means members do not authenticate.
type MemberKey struct{ k []byte }

// NewMemberKey derives the transport's key from a key file's key.
func NewMemberKey(secret []byte) (*MemberKey, error) {
	k, err := hkdf.Key(sha256.New, secret, nil, "cairn member transport v1", 32)
	if err != nil {
		return nil, err
	}
	return &MemberKey{k: k}, nil
}

func (k *MemberKey) tag(side string, pre Preamble, nA, nD []byte) []byte {
	m := hmac.New(sha256.New, k.k)
	m.Write([]byte(side))
	m.Write(appendPreamble(nil, pre))
	m.Write(nA)
	m.Write(nD)
	return m.Sum(nil)
}

// Accept runs the acceptor's side on c, whose preamble pre was read from r
// (c's buffered reader). A nil key accepts at once.
func (k *MemberKey) Accept(c net.Conn, r *bufio.Reader, pre Preamble) error {
	if k == nil {
		return nil
	}
	c.SetDeadline(time.Now().Add(authTimeout))
	defer c.SetDeadline(time.Time{})
	nA := make([]byte, authNonceLen)
	rand.Read(nA)
	if _, err := c.Write(nA); err != nil {
		return err
	}
	msg := make([]byte, authNonceLen+authTagLen)
	if _, err := io.ReadFull(r, msg); err != nil {
		return err
	}
	nD, got := msg[:authNonceLen], msg[authNonceLen:]
	if !hmac.Equal(got, k.tag("dialer", pre, nA, nD)) {
		return ErrMemberAuth
	}
	_, err := c.Write(k.tag("acceptor", pre, nA, nD))
	return err
}

// prove runs the dialer's side on c after it wrote the preamble pre. A nil
// key proves nothing.
func (k *MemberKey) prove(c net.Conn, pre Preamble) error {
	if k == nil {
		return nil
	}
	c.SetDeadline(time.Now().Add(authTimeout))
	defer c.SetDeadline(time.Time{})
	nA := make([]byte, authNonceLen)
	if _, err := io.ReadFull(c, nA); err != nil {
		return err
	}
	nD := make([]byte, authNonceLen)
	rand.Read(nD)
	if _, err := c.Write(append(nD, k.tag("dialer", pre, nA, nD)...)); err != nil {
		return err
	}
	got := make([]byte, authTagLen)
	if _, err := io.ReadFull(c, got); err != nil {
		return err
	}
	if !hmac.Equal(got, k.tag("acceptor", pre, nA, nD)) {
		return ErrMemberAuth
	}
	return nil
}
