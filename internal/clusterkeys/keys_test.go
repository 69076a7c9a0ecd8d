package clusterkeys

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn/internal/hlc"
)

type memBacking struct{ docs []bson.Raw }

func (m *memBacking) Load() ([]bson.Raw, error) { return m.docs, nil }
func (m *memBacking) Insert(d bson.Raw) error {
	for _, x := range m.docs {
		if x.Lookup("_id").Equal(d.Lookup("_id")) {
			return errors.New("duplicate _id")
		}
	}
	m.docs = append(m.docs, d)
	return nil
}

// TestProof: a proof covers the times that differ in the low 16 bits only
// ("Proofs cover a range"), and differs for other times and other keys.
func TestProof(t *testing.T) {
	k1, k2 := bytes.Repeat([]byte{1}, 20), bytes.Repeat([]byte{2}, 20)
	ts := hlc.New(1000, 5)
	if !bytes.Equal(Proof(k1, ts), Proof(k1, hlc.New(1000, 0xFFFF))) {
		t.Error("times in one range have different proofs")
	}
	for _, other := range [][]byte{Proof(k1, ts+0x10000), Proof(k1, hlc.New(1001, 5)), Proof(k2, ts)} {
		if bytes.Equal(Proof(k1, ts), other) {
			t.Error("a proof matches another time or key")
		}
	}
	if len(Proof(k1, ts)) != ProofLen {
		t.Errorf("proof of %d bytes", len(Proof(k1, ts)))
	}
}

// TestRotate: Rotate makes the current and the next key once, makes one
// more when the current expires, and a time signed before a rotation still
// validates after it ("A key per time").
func TestRotate(t *testing.T) {
	back := &memBacking{}
	keys := New(back)
	now := hlc.New(1_000_000, 1)
	if _, _, ok := keys.Sign(now); ok {
		t.Fatal("signed with no key")
	}
	if err := keys.Rotate(now, time.Hour); err != nil {
		t.Fatal(err)
	}
	if len(back.docs) != 2 {
		t.Fatalf("%d keys after the first rotation, want 2", len(back.docs))
	}
	if err := keys.Rotate(now, time.Hour); err != nil || len(back.docs) != 2 {
		t.Fatalf("a second rotation at the same time made keys: %d, %v", len(back.docs), err)
	}
	hash, id, ok := keys.Sign(now)
	if !ok {
		t.Fatal("no signature after rotation")
	}
	if err := keys.Validate(now, hash, id); err != nil {
		t.Fatalf("own signature: %v", err)
	}
	later := hlc.New(now.T()+3600+10, 0)
	if err := keys.Rotate(later, time.Hour); err != nil || len(back.docs) != 3 {
		t.Fatalf("rotation after the first key expired: %d keys, %v", len(back.docs), err)
	}
	if err := keys.Validate(now, hash, id); err != nil {
		t.Fatalf("a time signed before the rotation: %v", err)
	}
	hash2, id2, ok := keys.Sign(later)
	if !ok || id2 == id {
		t.Fatalf("later time signed by key %d (ok %v), the first was %d", id2, ok, id)
	}
	// Another process with the same backing (a secondary) validates it.
	if err := New(back).Validate(later, hash2, id2); err != nil {
		t.Fatalf("another reader: %v", err)
	}
}

// TestValidateRefuses: the refusals a client's $clusterTime can meet.
func TestValidateRefuses(t *testing.T) {
	back := &memBacking{}
	keys := New(back)
	now := hlc.New(1_000_000, 1)
	if err := keys.Rotate(now, time.Hour); err != nil {
		t.Fatal(err)
	}
	hash, id, _ := keys.Sign(now)
	ahead := hlc.New(now.T()+100, 0)
	far := hlc.New(now.T()+3*3600, 0)
	for _, tc := range []struct {
		name string
		ts   hlc.Timestamp
		hash []byte
		id   int64
		want error
	}{
		{"zero signature", ahead, make([]byte, 20), 0, ErrKeyNotFound},
		{"unknown key", ahead, hash, id + 100, ErrKeyNotFound},
		{"time advanced under an old proof", ahead, hash, id, ErrProofMismatch},
		{"short hash", now, hash[:10], id, ErrProofMismatch},
		{"beyond every key", far, Proof(make([]byte, 20), far), id, ErrKeyNotFound},
	} {
		if err := keys.Validate(tc.ts, tc.hash, tc.id); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}
