package auth

import (
	"errors"

	"github.com/xdg-go/scram"
)

// ErrAuthFailed is every failed authentication: an unknown user, a wrong
// password and a malformed message look alike to the client, as in
// MongoDB (AuthenticationFailed 18, "Authentication failed.").
var ErrAuthFailed = errors.New("auth: authentication failed")

// Conversation is one SASL SCRAM exchange with a client, for the users of
// one database. The proof is checked by the scram library (in constant
// time); Cairn only carries the messages.
type Conversation struct {
	Mechanism string
	db        string
	store     *Store
	conv      *scram.ServerConversation
	user      *User
}

// Start begins a conversation for mech against db's users.
func (s *Store) Start(mech, db string) (*Conversation, error) {
	hg, err := hashOf(mech)
	if err != nil {
		return nil, err
	}
	c := &Conversation{Mechanism: mech, db: db, store: s}
	srv, err := hg.NewServer(func(name string) (scram.StoredCredentials, error) {
		u, ok := s.Lookup(db, name)
		if !ok {
			return scram.StoredCredentials{}, ErrUserNotFound
		}
		cred, ok := u.Credentials[mech]
		if !ok {
			return scram.StoredCredentials{}, ErrUserNotFound
		}
		c.user = u
		return cred.stored()
	})
	if err != nil {
		return nil, err
	}
	c.conv = srv.NewConversation()
	return c, nil
}

// Step takes the client's next message and returns the server's answer;
// done is true once the client has proven its password (the server's final
// message carries the server's own proof for the client to check). Any
// failure is ErrAuthFailed and ends the conversation.
func (c *Conversation) Step(payload []byte) (reply []byte, done bool, err error) {
	if c.conv.Done() {
		return nil, false, ErrAuthFailed
	}
	out, err := c.conv.Step(string(payload))
	if err != nil {
		return nil, false, ErrAuthFailed
	}
	if c.conv.Done() {
		if !c.conv.Valid() {
			return nil, false, ErrAuthFailed
		}
		return []byte(out), true, nil
	}
	return []byte(out), false, nil
}

// User is the authenticated user once Step reported done.
func (c *Conversation) User() *User {
	if c.conv.Done() && c.conv.Valid() {
		return c.user
	}
	return nil
}

// Username is the name the client gave (known once its first message was
// read, whether or not it proves the password), for the audit log.
func (c *Conversation) Username() string { return c.conv.Username() }

// DB is the database whose users the conversation is for.
func (c *Conversation) DB() string { return c.db }
