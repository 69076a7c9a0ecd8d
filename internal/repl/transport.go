package repl

import (
	"bytes"
	"math/rand/v2"
	"sync"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Transport carries Raft messages between the members of a group. Send is
// best effort and must not block the node loop: Raft retransmits what is
// lost, so a transport may drop, delay, duplicate or reorder messages
// ("Transport may lose"), but never alter one.
type Transport interface {
	// Send queues messages for delivery to their To members.
	Send(msgs []*pb.Message)
	// Recv delivers the messages sent to this member.
	Recv() <-chan *pb.Message
	// Close stops sending and receiving.
	Close() error
}

// inboxSize is how many undelivered messages a member's inbox holds before
// the transport drops new ones, as a full network buffer would.
const inboxSize = 4096

// Network is an in-process network for tests: one Endpoint per member,
// with faults drawn from a seeded random source. Each message is marshalled
// and unmarshalled on its way, as on a wire, so members never share memory.
type Network struct {
	mu        sync.Mutex
	rnd       *rand.Rand
	inbox     map[uint64]chan *pb.Message
	cut       map[[2]uint64]bool // from, to → messages dropped
	drop, dup float64
	maxDelay  time.Duration
	closed    bool
	timers    sync.WaitGroup
	// streamers of the members whose state machines stream snapshots:
	// a MsgSnap between two of them carries the stream beside it.
	streamers map[uint64]SnapshotStreamer
}

// NewNetwork returns a network with no faults whose random choices come
// from seed.
func NewNetwork(seed uint64) *Network {
	return &Network{
		rnd:   rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		inbox: map[uint64]chan *pb.Message{},
		cut:   map[[2]uint64]bool{},

		streamers: map[uint64]SnapshotStreamer{},
	}
}

// SetFaults sets the probability that a message is dropped, that it is
// delivered twice, and the largest random delay of a delivery (messages
// with different delays arrive reordered).
func (n *Network) SetFaults(drop, dup float64, maxDelay time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.drop, n.dup, n.maxDelay = drop, dup, maxDelay
}

// Partition cuts every link between the two sides, both ways.
func (n *Network) Partition(a, b []uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, x := range a {
		for _, y := range b {
			n.cut[[2]uint64{x, y}] = true
			n.cut[[2]uint64{y, x}] = true
		}
	}
}

// Isolate cuts id off from every other member.
func (n *Network) Isolate(id uint64) {
	n.mu.Lock()
	var others []uint64
	for m := range n.inbox {
		if m != id {
			others = append(others, m)
		}
	}
	n.mu.Unlock()
	n.Partition([]uint64{id}, others)
}

// Heal removes every partition and fault.
func (n *Network) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut = map[[2]uint64]bool{}
	n.drop, n.dup, n.maxDelay = 0, 0, 0
}

// Close stops all deliveries and waits for delayed ones to finish.
func (n *Network) Close() {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	n.timers.Wait()
}

// Endpoint returns member id's transport. A member restarted with the same
// id gets a fresh inbox; messages queued for its previous life are lost.
func (n *Network) Endpoint(id uint64) Transport {
	n.mu.Lock()
	defer n.mu.Unlock()
	ch := make(chan *pb.Message, inboxSize)
	n.inbox[id] = ch
	return &endpoint{n: n, id: id, ch: ch}
}

type endpoint struct {
	n  *Network
	id uint64
	ch chan *pb.Message
}

func (e *endpoint) Recv() <-chan *pb.Message { return e.ch }

func (e *endpoint) Close() error {
	e.n.mu.Lock()
	defer e.n.mu.Unlock()
	if e.n.inbox[e.id] == e.ch {
		delete(e.n.inbox, e.id)
	}
	return nil
}

// SetSnapshotStreamer implements streaming: a MsgSnap this member sends
// carries st's stream, written at once into memory (as a sender's
// transport would write it to the wire), and is handed to the receiver's
// streamer before its delivery; faults apply to the message and its
// stream as one.
func (e *endpoint) SetSnapshotStreamer(st SnapshotStreamer) {
	e.n.mu.Lock()
	e.n.streamers[e.id] = st
	e.n.mu.Unlock()
}

func (e *endpoint) Send(msgs []*pb.Message) {
	for _, m := range msgs {
		wire, err := proto.Marshal(m)
		if err != nil {
			continue
		}
		var stream []byte
		if m.GetType() == pb.MsgSnap {
			e.n.mu.Lock()
			st := e.n.streamers[e.id]
			e.n.mu.Unlock()
			if st != nil {
				var buf bytes.Buffer
				if st.WriteSnapshot(m.GetSnapshot().GetData(), &buf) != nil {
					continue
				}
				stream = buf.Bytes()
			}
		}
		e.n.route(e.id, m.GetTo(), wire, stream)
	}
}

func (n *Network) route(from, to uint64, wire, stream []byte) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed || n.cut[[2]uint64{from, to}] || n.rnd.Float64() < n.drop {
		return
	}
	copies := 1
	if n.rnd.Float64() < n.dup {
		copies = 2
	}
	for range copies {
		var delay time.Duration
		if n.maxDelay > 0 {
			delay = time.Duration(n.rnd.Int64N(int64(n.maxDelay)))
		}
		if delay == 0 {
			n.deliverLocked(from, to, wire, stream)
			continue
		}
		n.timers.Add(1)
		time.AfterFunc(delay, func() {
			defer n.timers.Done()
			n.mu.Lock()
			defer n.mu.Unlock()
			if !n.closed && !n.cut[[2]uint64{from, to}] {
				n.deliverLocked(from, to, wire, stream)
			}
		})
	}
}

func (n *Network) deliverLocked(from, to uint64, wire, stream []byte) {
	ch, ok := n.inbox[to]
	if !ok {
		return
	}
	m := &pb.Message{}
	if err := proto.Unmarshal(wire, m); err != nil {
		return
	}
	if st := n.streamers[to]; st != nil && stream != nil {
		// The receiver stores the stream off the network's lock, then
		// the message is delivered, as a streaming transport does.
		n.timers.Add(1)
		go func() {
			defer n.timers.Done()
			if st.ReadSnapshot(m.GetSnapshot().GetData(), bytes.NewReader(stream)) != nil {
				return
			}
			n.mu.Lock()
			defer n.mu.Unlock()
			if n.closed || n.inbox[to] != ch {
				return
			}
			select {
			case ch <- m:
			default:
			}
		}()
		return
	}
	select {
	case ch <- m:
	default: // inbox full: dropped
	}
}
