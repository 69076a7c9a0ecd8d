package planner

import (
	"errors"
	"testing"
)

// failing is a stage whose every work fails; it records whether it was
// closed.
type failing struct {
	stats  Stats
	closed bool
}

func (s *failing) work(*execCtx) (*member, state, error) { return nil, isEOF, errors.New("boom") }
func (s *failing) common() *Stats                        { return &s.stats }
func (s *failing) children() []stage                     { return nil }
func (s *failing) describe(*doc, bool)                   {}
func (s *failing) close() error                          { s.closed = true; return nil }

// TestTrialFailureClosesCandidates checks that when every candidate of a
// trial fails (maxTimeMS expiring during the trial, say), choose returns
// the error and closes every candidate: the Exec holds none of them, so
// nothing else would release their cursors.
func TestTrialFailureClosesCandidates(t *testing.T) {
	a, b := &failing{}, &failing{}
	e := &Exec{x: &execCtx{}, q: &Query{}}
	err := e.choose([]*candidate{{root: a}, {root: b}}, nil)
	if err == nil || err.Error() != "boom" {
		t.Fatalf("choose: err %v, want boom", err)
	}
	if !a.closed || !b.closed {
		t.Fatalf("candidates closed: %v %v, want both", a.closed, b.closed)
	}
	if e.root != nil || len(e.rejected) != 0 {
		t.Fatalf("Exec keeps a failed plan: root %v, rejected %d", e.root, len(e.rejected))
	}
}
