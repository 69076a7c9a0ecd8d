package clusterkeys

import (
	"cmp"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn/internal/hlc"
)

// The package's errors; the command layer gives them MongoDB's codes.
var (
	ErrKeyNotFound   = errors.New("clusterkeys: no key valid for the cluster time")
	ErrProofMismatch = errors.New("clusterkeys: proof does not match the cluster time")
)

// DefaultRotation is MongoDB's KeysRotationIntervalSec default (90 days):
// how long each key signs.
const DefaultRotation = 90 * 24 * time.Hour

// rangeMask is the low bits of a time a proof covers ("Proofs cover a range").
const rangeMask = 0xFFFF

// ProofLen is the length of a signature's hash (SHA-1's).
const ProofLen = sha1.Size

// Key is one admin.system.keys document.
type Key struct {
	ID        int64
	Secret    []byte // 20 bytes
	ExpiresAt hlc.Timestamp
}

// Backing is where the keys live (admin.system.keys), supplied by the
// command layer.
type Backing interface {
	// Load returns every key document.
	Load() ([]bson.Raw, error)
	// Insert stores a new key document.
	Insert(doc bson.Raw) error
}

// Keys is the cache of the keys in a Backing. Safe for concurrent use.
type Keys struct {
	back Backing

	mu   sync.RWMutex
	keys []Key // ascending ExpiresAt
	// loadedAt throttles reloads on a miss: a client sending unknown key
	// ids does not make every command read the collection.
	loadedAt time.Time
	// last is the newest signature made: replies in one range of times
	// (and under one key) reuse it instead of an HMAC each, as MongoDB's
	// TimeProofService caches.
	last atomic.Pointer[signed]
}

type signed struct {
	ceil  uint64
	keyID int64
	hash  []byte
}

// New returns the keys of back (read on first use).
func New(back Backing) *Keys { return &Keys{back: back} }

// Proof is the signature of ts under key ("Proofs cover a range").
func Proof(secret []byte, ts hlc.Timestamp) []byte {
	m := hmac.New(sha1.New, secret)
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(ts)|rangeMask)
	m.Write(b[:])
	return m.Sum(nil)
}

// Reload reads the keys from the backing again.
func (k *Keys) Reload() error {
	docs, err := k.back.Load()
	if err != nil {
		return err
	}
	var keys []Key
	for _, d := range docs {
		key, err := fromDoc(d)
		if err != nil {
			return err
		}
		keys = append(keys, key)
	}
	slices.SortFunc(keys, func(a, b Key) int {
		if c := cmp.Compare(a.ExpiresAt, b.ExpiresAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	k.mu.Lock()
	k.keys, k.loadedAt = keys, time.Now()
	k.mu.Unlock()
	return nil
}

// Sign returns the signature of ts by the key that signs it (the one
// expiring soonest after it); ok is false when no key is valid for ts yet
// (a set whose primary has not made one): the caller sends a zero
// signature then, as MongoDB's trySignLogicalTime.
func (k *Keys) Sign(ts hlc.Timestamp) (hash []byte, keyID int64, ok bool) {
	key, found := k.signer(ts)
	if c := k.last.Load(); found && c != nil && c.ceil == uint64(ts)|rangeMask && c.keyID == key.ID {
		return c.hash, c.keyID, true
	}
	if !found {
		// A secondary learns keys by replication: look again, at most
		// once a second.
		k.reloadIfStale()
		if key, found = k.signer(ts); !found {
			return nil, 0, false
		}
	}
	hash = Proof(key.Secret, ts)
	k.last.Store(&signed{ceil: uint64(ts) | rangeMask, keyID: key.ID, hash: hash})
	return hash, key.ID, true
}

func (k *Keys) signer(ts hlc.Timestamp) (Key, bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	for _, key := range k.keys {
		if key.ExpiresAt > ts {
			return key, true
		}
	}
	return Key{}, false
}

func (k *Keys) byID(id int64) (Key, bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	for _, key := range k.keys {
		if key.ID == id {
			return key, true
		}
	}
	return Key{}, false
}

func (k *Keys) reloadIfStale() {
	k.mu.RLock()
	stale := time.Since(k.loadedAt) > time.Second
	k.mu.RUnlock()
	if stale {
		_ = k.Reload()
	}
}

// Validate checks a client's signed cluster time: the key keyID must exist
// and be valid for ts (ErrKeyNotFound), and hash must be its proof of ts
// (ErrProofMismatch, compared in constant time).
func (k *Keys) Validate(ts hlc.Timestamp, hash []byte, keyID int64) error {
	key, ok := k.byID(keyID)
	if !ok {
		k.reloadIfStale()
		key, ok = k.byID(keyID)
	}
	if !ok || key.ExpiresAt <= ts {
		return fmt.Errorf("%w: no keys found for HMAC that is valid for time: %s with id: %d", ErrKeyNotFound, ts, keyID)
	}
	if !hmac.Equal(hash, Proof(key.Secret, ts)) {
		return ErrProofMismatch
	}
	return nil
}

// Rotate makes the keys "A key per time" needs at now, on the primary:
// none when they exist. A key's id is the cluster time it was made at, its
// expiresAt the previous key's plus interval (now plus interval for the
// first).
func (k *Keys) Rotate(now hlc.Timestamp, interval time.Duration) error {
	if err := k.Reload(); err != nil {
		return err
	}
	k.mu.RLock()
	var valid []Key
	lastExpiry := hlc.Timestamp(0)
	for _, key := range k.keys {
		if key.ExpiresAt > now {
			valid = append(valid, key)
		}
		lastExpiry = max(lastExpiry, key.ExpiresAt)
	}
	k.mu.RUnlock()
	step := uint32(interval / time.Second)
	made := false
	for n := len(valid); n < 2; n++ {
		expires := hlc.New(now.T()+step, 0)
		if lastExpiry > now {
			expires = hlc.New(lastExpiry.T()+step, 0)
		}
		secret := make([]byte, ProofLen)
		if _, err := rand.Read(secret); err != nil {
			return err
		}
		id := int64(now) + int64(n) // distinct ids for the two made at once
		if err := k.back.Insert(Key{ID: id, Secret: secret, ExpiresAt: expires}.doc()); err != nil {
			return err
		}
		lastExpiry, made = expires, true
	}
	if made {
		return k.Reload()
	}
	return nil
}

// Ready reports, from memory, whether Rotate(now) would make nothing: a
// key valid at now and the next one are known.
func (k *Keys) Ready(now hlc.Timestamp) bool {
	k.mu.RLock()
	defer k.mu.RUnlock()
	n := 0
	for _, key := range k.keys {
		if key.ExpiresAt > now {
			n++
		}
	}
	return n >= 2
}

// Len is how many keys are known.
func (k *Keys) Len() int {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return len(k.keys)
}

func (key Key) doc() bson.Raw {
	d, _ := bson.Marshal(bson.D{{Key: "_id", Value: key.ID}, {Key: "purpose", Value: "HMAC"},
		{Key: "key", Value: bson.Binary{Data: key.Secret}},
		{Key: "expiresAt", Value: bson.Timestamp{T: key.ExpiresAt.T(), I: key.ExpiresAt.I()}}})
	return d
}

func fromDoc(d bson.Raw) (Key, error) {
	id, ok := d.Lookup("_id").Int64OK()
	_, secret, ok2 := d.Lookup("key").BinaryOK()
	t, i, ok3 := d.Lookup("expiresAt").TimestampOK()
	if !ok || !ok2 || !ok3 || len(secret) != ProofLen {
		return Key{}, fmt.Errorf("clusterkeys: corrupt admin.system.keys document (_id %v)", d.Lookup("_id"))
	}
	return Key{ID: id, Secret: append([]byte(nil), secret...), ExpiresAt: hlc.New(t, i)}, nil
}
