package repl

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"
)

// snapStore is a member's snapshots as its disk would hold them: it
// survives the member's crashes and restarts.
type snapStore struct {
	mu                 sync.Mutex
	held               map[string][]byte
	streamed, received int
}

// streamSM is memSM with streamed snapshots: Snapshot stores the state
// and returns a descriptor naming it, the transport streams the state
// (WriteSnapshot, ReadSnapshot), and Restore reads it back by name.
type streamSM struct {
	*memSM
	store *snapStore
}

func (s *streamSM) Snapshot() ([]byte, error) {
	data, err := s.memSM.Snapshot()
	if err != nil {
		return nil, err
	}
	s.store.mu.Lock()
	defer s.store.mu.Unlock()
	name := fmt.Sprintf("snap-%d", len(s.store.held))
	s.store.held[name] = data
	return []byte(name), nil
}

func (s *streamSM) Restore(index uint64, desc []byte) error {
	if len(desc) == 0 {
		return s.memSM.Restore(index, nil)
	}
	s.store.mu.Lock()
	data, ok := s.store.held[string(desc)]
	s.store.mu.Unlock()
	if !ok {
		return fmt.Errorf("snapshot %q not held", desc)
	}
	return s.memSM.Restore(index, data)
}

func (s *streamSM) WriteSnapshot(desc []byte, w io.Writer) error {
	s.store.mu.Lock()
	data, ok := s.store.held[string(desc)]
	s.store.streamed++
	s.store.mu.Unlock()
	if !ok {
		return errors.New("no such snapshot")
	}
	_, err := w.Write(data)
	return err
}

func (s *streamSM) ReadSnapshot(desc []byte, r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.store.mu.Lock()
	defer s.store.mu.Unlock()
	s.store.held[string(desc)] = data
	s.store.received++
	return nil
}

// TestStreamedSnapshotCatchUp: members compact their logs by themselves
// ("Bounded log", keeping a tail); a member down while the log moved past
// its tail catches up from a snapshot streamed after its MsgSnap ("Snapshot
// held before stepped"), over the faulty in-process network and over TCP,
// and every member ends with the same applied state; a member crashed
// again right after it installed restores from what it received.
func TestStreamedSnapshotCatchUp(t *testing.T) {
	for _, tcp := range []bool{false, true} {
		t.Run(fmt.Sprintf("tcp=%v", tcp), func(t *testing.T) {
			c := newClusterWith(t, 3, testSeed(t), tcp, "", func(c *cluster) {
				c.streaming, c.compactEvery, c.compactKeep = true, 20, 5
			})
			if !tcp {
				c.net.SetFaults(0.05, 0.05, 3*time.Millisecond)
			}
			l := c.waitLeader(5 * time.Second)
			victim := c.ids[0]
			if victim == l {
				victim = c.ids[1]
			}
			acked := map[string]uint64{}
			commit := func(prefix string, n int) uint64 {
				var last uint64
				for i := range n {
					name, idx, err := c.commit(fmt.Sprintf("%s-%d", prefix, i), 10*time.Second)
					if err != nil {
						t.Fatal(err)
					}
					acked[name], last = idx, idx
				}
				return last
			}
			commit("before", 10)
			c.crash(victim)
			last := commit("down", 80)
			for _, id := range c.ids {
				if id == victim {
					continue
				}
				if first, _ := c.logs[id].FirstIndex(); first+40 < last {
					t.Errorf("member %d: log starts at %d with %d applied; compaction every 20 should keep it short", id, first, last)
				}
			}
			c.start(victim)
			c.converge(last, 20*time.Second)
			st := c.snaps[victim]
			st.mu.Lock()
			received := st.received
			st.mu.Unlock()
			if received == 0 {
				t.Fatalf("member %d caught up without receiving a streamed snapshot", victim)
			}
			// Restarted again: it restores from its own store.
			c.restart(victim)
			last = commit("after", 10)
			got := payloads(t, c.converge(last, 20*time.Second))
			for p, idx := range acked {
				if idx <= last && got[p] != idx {
					t.Errorf("%s acknowledged at %d, applied at %d on every member", p, idx, got[p])
				}
			}
		})
	}
}
