package storage

import (
	"bytes"
	"errors"
	"testing"
)

// TestReplicatedGroups: with Hooks.Replicate a group reaches Pebble only
// through ApplyReplicated (invariant "Replicated in order"), with its log
// index; the same representation applied to a second store gives the same
// keys; a group Replicate fails is written nowhere and its requests get
// the error.
func TestReplicatedGroups(t *testing.T) {
	follower := openTest(t, Options{})
	var primary *DB
	var index uint64
	refuse := errors.New("not the primary")
	failNext := false
	hooks := &Hooks{Replicate: func(repr []byte, _ bool) error {
		if failNext {
			return refuse
		}
		index++
		if err := primary.ApplyReplicated(index, repr); err != nil {
			return err
		}
		return follower.ApplyReplicated(index, repr)
	}}
	primary = openTest(t, Options{Hooks: hooks})
	for i, tc := range []struct {
		key, val string
		fail     bool
	}{
		{"d1a", "x", false},
		{"d1b", "y", true},
		{"d1c", "z", false},
	} {
		failNext = tc.fail
		err := primary.Write(func(tx *Txn) error { tx.Set([]byte(tc.key), []byte(tc.val)); return nil })
		if tc.fail != errors.Is(err, refuse) {
			t.Fatalf("write %d: %v", i, err)
		}
		for _, db := range []*DB{primary, follower} {
			v, found, err := db.Get(nil, []byte(tc.key))
			if err != nil || found == tc.fail || found && !bytes.Equal(v, []byte(tc.val)) {
				t.Fatalf("write %d: %s = %q, %v, %v", i, tc.key, v, found, err)
			}
		}
	}
	for _, db := range []*DB{primary, follower} {
		if got, err := db.AppliedIndex(); err != nil || got != 2 {
			t.Errorf("applied index %d, %v; want 2", got, err)
		}
	}
}
