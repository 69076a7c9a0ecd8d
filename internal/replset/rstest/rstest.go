// Package rstest starts replica sets inside one test process: every member
// a real engine and replset.Member over its own data directory, talking
// over repl's faulty in-process Network (drops, delays, duplicates,
// partitions) and ticking from its own repl.ManualClock, which a driver
// goroutine advances (paused or skewed per member). The helpers are the
// faults of issue 18's tests: WaitForPrimary, Partition, Heal, Kill,
// Restart, Pause, Resume and SkewClock; Write and Checksum drive and
// compare the members' stores.
//
// Kill stops a member as a process exit does: its node stops, its engine
// closes without a clean-shutdown step of its own, and what it wrote to
// its files stays.
//
// PowerCut cuts the power of members (one, or several at one moment):
// with Options.Crashable each member's files are on its own
// vfs.NewCrashableMem, and a cut first stops everything the member sends
// (nothing it does afterwards reaches another member), then reduces its
// filesystem to a crash image (what was synced, plus Options.KeepUnsynced
// percent of the unsynced blocks and directory entries), and only then
// stops its goroutines (Close, on the discarded filesystem); Restart
// starts it again on the image. A write acknowledged before a cut began is
// on a majority of synced logs; one acknowledged after may be lost with
// the power (the test decides what it counts: TestPowerCut*).
// Pause stops a member's clock and cuts it off the network, as SIGSTOP
// does to a process seen from outside; Resume undoes both.
//
// Invariant "Same store everywhere": once healed and caught up, every
// member's replicated keys are identical — everything but its own system
// records and the catalog entries of its local database (each member
// creates local.oplog.rs itself, with its own UUID, as in MongoDB; the
// entries of the oplog are replicated). Checksum compares them.
package rstest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	pb "go.etcd.io/raft/v3/raftpb"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/repl"
	"github.com/cairndb/cairn/internal/replset"
	"github.com/cairndb/cairn/internal/storage"
)

// Tick is one Raft tick of a member; the driver advances every clock one
// tick per real millisecond, so the default election timeout (1 s, 100
// ticks) takes 100 ms of test time.
const Tick = 10 * time.Millisecond

// basePort numbers the members' hosts (127.0.0.1:basePort+i); nothing
// listens there, the in-process network carries their messages.
const basePort = 47000

// Set is a replica set of in-process members.
type Set struct {
	t       testing.TB
	Net     *repl.Network
	dirs    []string
	compact uint64

	mu        sync.Mutex
	members   []*member
	clocks    []*repl.ManualClock
	paused    []bool
	rates     []float64
	fs        []*vfs.MemFS              // with Options.Crashable: each member's filesystem
	onInstall func(i int, copied int64) // OnInstallProgress
	keep      int                       // Options.KeepUnsynced
	rnd       *rand.Rand                // the crash images' choices of unsynced data

	stop chan struct{}
	wg   sync.WaitGroup
}

type member struct {
	eng *engine.Engine
	m   *replset.Member
	tr  atomic.Pointer[cutTransport] // the transport its node sends with
}

// Options configure Start.
type Options struct {
	// CompactEntries bounds every member's Raft log (replset.Options');
	// 0 keeps the default.
	CompactEntries uint64
	// Crashable puts each member's files on its own crashable in-memory
	// filesystem (vfs.NewCrashableMem), which PowerCut needs; by default
	// they are in the test's temporary directory.
	Crashable bool
	// KeepUnsynced is the percentage of unsynced blocks and directory
	// entries a PowerCut's crash image keeps, each drawn from the seed
	// (0: exactly what was synced).
	KeepUnsynced int
}

// Start starts n members, initiates the set on member 0 with all of them
// and waits until every member is a voter. Seed seeds the network's
// faults (none until Net.SetFaults).
func Start(t testing.TB, n int, seed uint64, opts Options) *Set {
	t.Helper()
	s := &Set{t: t, Net: repl.NewNetwork(seed), compact: opts.CompactEntries, stop: make(chan struct{}),
		keep: opts.KeepUnsynced, rnd: rand.New(rand.NewPCG(seed, 11))}
	root := "/"
	if !opts.Crashable {
		root = t.TempDir()
	}
	for i := range n {
		if opts.Crashable {
			s.fs = append(s.fs, vfs.NewCrashableMem())
		}
		s.dirs = append(s.dirs, filepath.Join(root, fmt.Sprintf("m%d", i)))
		s.clocks = append(s.clocks, repl.NewManualClock(time.Unix(0, 0)))
		s.paused = append(s.paused, false)
		s.rates = append(s.rates, 1)
		s.members = append(s.members, nil)
	}
	t.Cleanup(s.close)
	s.wg.Add(1)
	go s.drive()
	for i := range n {
		s.start(i, i > 0)
	}
	ms := bsoncore.NewArrayBuilder()
	for i := range n {
		ms.AppendDocument(bsoncore.NewDocumentBuilder().AppendInt32("_id", int32(i)).AppendString("host", Host(i)).Build())
	}
	cfg := bsoncore.NewDocumentBuilder().AppendString("_id", "rs0").AppendArray("members", ms.Build()).Build()
	if err := s.Member(0).Initiate(context.Background(), cfg); err != nil {
		t.Fatalf("rstest: replSetInitiate: %v", err)
	}
	s.WaitVoters(n, 30*time.Second)
	return s
}

// Host is member i's host in the configuration.
func Host(i int) string { return "127.0.0.1:" + strconv.Itoa(basePort+i) }

// raftID is member i's Raft id (its _id + 1, as package replset numbers).
func raftID(i int) uint64 { return uint64(i) + 1 }

func (s *Set) start(i int, join bool) {
	s.t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	eopts := engine.Options{Logger: quiet}
	s.mu.Lock()
	if s.fs != nil {
		eopts.FS = s.fs[i]
	}
	s.mu.Unlock()
	eng, err := engine.Open(s.dirs[i], eopts)
	if err != nil {
		s.t.Fatalf("rstest: member %d: %v", i, err)
	}
	mb := &member{eng: eng}
	opts := replset.Options{
		SetName: "rs0", Dir: s.dirs[i], Port: basePort + i, BindIP: "127.0.0.1", Engine: eng, Logger: quiet,
		CompactEntries: s.compact,
		Transport: func(id uint64) repl.Transport {
			tr := &cutTransport{Transport: s.Net.Endpoint(id)}
			mb.tr.Store(tr)
			return tr
		},
		Clock: s.clocks[i],
		Dial:  s.dial,
		OnRestoreProgress: func(copied int64) {
			s.mu.Lock()
			f := s.onInstall
			s.mu.Unlock()
			if f != nil {
				f(i, copied)
			}
		},
	}
	if join {
		opts.JoinAs = raftID(i)
	}
	m, err := replset.New(opts)
	if err != nil {
		eng.Close()
		s.t.Fatalf("rstest: member %d: %v", i, err)
	}
	mb.m = m
	s.mu.Lock()
	s.members[i] = mb
	s.mu.Unlock()
}

// dial answers for a member's host while it runs.
func (s *Set) dial(host string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.members {
		if Host(i) == host && s.members[i] != nil {
			return nil
		}
	}
	return errors.New("rstest: no member runs at " + host)
}

// drive advances every running member's clock one tick per millisecond
// (times its rate), none of a paused one.
func (s *Set) drive() {
	defer s.wg.Done()
	tk := time.NewTicker(time.Millisecond)
	defer tk.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tk.C:
		}
		s.mu.Lock()
		for i, c := range s.clocks {
			if !s.paused[i] {
				c.Advance(time.Duration(float64(Tick) * s.rates[i]))
			}
		}
		s.mu.Unlock()
	}
}

// Member returns member i's replset.Member (nil while killed).
func (s *Set) Member(i int) *replset.Member {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.members[i] == nil {
		return nil
	}
	return s.members[i].m
}

// Engine returns member i's engine (nil while killed).
func (s *Set) Engine(i int) *engine.Engine {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.members[i] == nil {
		return nil
	}
	return s.members[i].eng
}

// WaitForPrimary returns the member that accepts writes, waiting up to
// timeout (fatal after it).
func (s *Set) WaitForPrimary(timeout time.Duration) int {
	s.t.Helper()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		for i := range s.dirs {
			if m := s.Member(i); m != nil && m.CanWrite() == nil {
				return i
			}
		}
	}
	s.t.Fatalf("rstest: no primary within %v", timeout)
	return -1
}

// WaitVoters waits until the primary's replSetGetStatus shows n members
// healthy as PRIMARY or SECONDARY.
func (s *Set) WaitVoters(n int, timeout time.Duration) {
	s.t.Helper()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for i := range s.dirs {
			m := s.Member(i)
			if m == nil || m.CanWrite() != nil {
				continue
			}
			st, err := m.Status()
			if err != nil {
				continue
			}
			healthy := 0
			vals, _ := st.Lookup("members").Array().Values()
			for _, v := range vals {
				if state := v.Document().Lookup("state").Int32(); state == 1 || state == 2 {
					healthy++
				}
			}
			if healthy >= n {
				return
			}
		}
	}
	s.t.Fatalf("rstest: %d healthy voters not reached within %v", n, timeout)
}

// Write writes key = val through member i's commit pipeline (one commit
// group, replicated as one entry): nil once the set committed it.
func (s *Set) Write(i int, key, val []byte) error {
	eng := s.Engine(i)
	if eng == nil {
		return errors.New("rstest: member is killed")
	}
	return eng.Storage().Write(func(tx *storage.Txn) error {
		tx.Set(append([]byte{'x', '/'}, key...), val)
		return nil
	})
}

// Read returns member i's value of key as its applied state holds it.
func (s *Set) Read(i int, key []byte) ([]byte, bool, error) {
	eng := s.Engine(i)
	if eng == nil {
		return nil, false, errors.New("rstest: member is killed")
	}
	return eng.Storage().Get(nil, append([]byte{'x', '/'}, key...))
}

// Checksum hashes member i's replicated keys: all but the system records
// a member keeps for itself (keyspace 's', except the replica set's
// configuration, which is replicated) and its local database's catalog
// entries.
func (s *Set) Checksum(i int) (string, int, error) {
	h := sha256.New()
	n := 0
	err := s.scan(i, func(k, v []byte) {
		fmt.Fprintf(h, "%d:%x=%d:%x;", len(k), k, len(v), v)
		n++
	})
	return hex.EncodeToString(h.Sum(nil)), n, err
}

// scan calls f with each of member i's replicated keys and values.
func (s *Set) scan(i int, f func(k, v []byte)) error {
	eng := s.Engine(i)
	if eng == nil {
		return errors.New("rstest: member is killed")
	}
	it, err := eng.Storage().NewIter(nil, nil)
	if err != nil {
		return err
	}
	defer it.Close()
	cfgKey := storage.SystemKey("replset/config")
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if k[0] == storage.SpaceSystem && !bytes.Equal(k, cfgKey) {
			continue
		}
		v, err := it.Value()
		if err != nil {
			return err
		}
		if k[0] == storage.SpaceMeta {
			if db, ok := bsoncore.Document(v).Lookup("db").StringValueOK(); ok && db == "local" {
				continue // each member's own local database (MongoDB's is not replicated either)
			}
		}
		f(k, v)
	}
	return nil
}

// Diff lists up to max keys whose values differ between members i and j
// (or that only one holds).
func (s *Set) Diff(i, j, max int) []string {
	a, b := map[string]string{}, map[string]string{}
	_ = s.scan(i, func(k, v []byte) { a[string(k)] = string(v) })
	_ = s.scan(j, func(k, v []byte) { b[string(k)] = string(v) })
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			out = append(out, fmt.Sprintf("%q: member %d %q, member %d %q (held %v)", k, i, trim(v), j, trim(w), ok))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, fmt.Sprintf("%q: only member %d", k, j))
		}
	}
	slices.Sort(out)
	return out[:min(len(out), max)]
}

func trim(v string) string { return v[:min(len(v), 80)] }

// WaitSame waits until every running member's Checksum is the same and
// returns it with the number of keys.
func (s *Set) WaitSame(timeout time.Duration) (string, int) {
	s.t.Helper()
	var last []string
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		last = last[:0]
		same, n := true, 0
		for i := range s.dirs {
			if s.Member(i) == nil {
				continue
			}
			sum, keys, err := s.Checksum(i)
			if err != nil {
				same = false
				break
			}
			if len(last) > 0 && sum != last[0] {
				same = false
			}
			last, n = append(last, sum), keys
		}
		if same && len(last) > 0 {
			return last[0], n
		}
	}
	var diffs []string
	for i := 1; i < len(s.dirs); i++ {
		if s.Member(0) != nil && s.Member(i) != nil {
			diffs = append(diffs, s.Diff(0, i, 5)...)
		}
	}
	s.t.Fatalf("rstest: the members' stores still differ after %v: %v\n%s", timeout, last, strings.Join(diffs, "\n"))
	return "", 0
}

// Partition cuts the members in a from those in b, both ways.
func (s *Set) Partition(a, b []int) {
	var ia, ib []uint64
	for _, i := range a {
		ia = append(ia, raftID(i))
	}
	for _, i := range b {
		ib = append(ib, raftID(i))
	}
	s.Net.Partition(ia, ib)
}

// Heal removes every partition and isolation.
func (s *Set) Heal() { s.Net.Heal() }

// Kill stops member i as a process exit would (see the package comment).
func (s *Set) Kill(i int) {
	s.t.Helper()
	s.mu.Lock()
	mb := s.members[i]
	s.members[i] = nil
	s.mu.Unlock()
	if mb == nil {
		return
	}
	s.stopMember(i, mb, "")
}

// stopMember closes member i's node, then its engine, logging what either
// returned; after says what came before ("after its power cut").
func (s *Set) stopMember(i int, mb *member, after string) {
	if err := mb.m.Close(); err != nil {
		s.t.Logf("rstest: member %d stopped%s with %v", i, after, err)
	}
	if err := mb.eng.Close(); err != nil {
		s.t.Logf("rstest: member %d's engine closed%s with %v", i, after, err)
	}
}

// PowerCut cuts the power of the members given, at one moment (see the
// package comment); Restart brings each back on its crash image.
func (s *Set) PowerCut(members ...int) {
	s.t.Helper()
	if s.fs == nil {
		s.t.Fatal("rstest: PowerCut needs Options.Crashable")
	}
	cut := s.cutPower(members)
	// Then their goroutines stop, on filesystems no longer used.
	s.stopCut(members, cut)
}

// OnInstallProgress makes f run on member i's node loop after each batch
// of a snapshot's install (replset.Options.OnRestoreProgress) with the
// bytes copied so far; nil stops it. f may call PowerCutNow.
func (s *Set) OnInstallProgress(f func(i int, copied int64)) {
	s.mu.Lock()
	s.onInstall = f
	s.mu.Unlock()
}

// PowerCutNow cuts member i's power as PowerCut does but returns before
// its goroutines stop (from a hook on its own node loop, which must
// return first), and a channel closed once they have.
func (s *Set) PowerCutNow(i int) <-chan struct{} {
	done := make(chan struct{})
	if s.fs == nil {
		s.t.Errorf("rstest: PowerCutNow needs Options.Crashable")
		close(done)
		return done
	}
	cut := s.cutPower([]int{i})
	go func() {
		defer close(done)
		s.stopCut([]int{i}, cut)
	}()
	return done
}

// cutPower takes the members off the set, silences them and replaces
// their filesystems by crash images; it returns them to be stopped.
func (s *Set) cutPower(members []int) []*member {
	cut := make([]*member, len(members))
	s.mu.Lock()
	for k, i := range members {
		cut[k], s.members[i] = s.members[i], nil
	}
	s.mu.Unlock()
	// First nothing leaves any of them, so no member acts on what one
	// did after its image was taken.
	for _, mb := range cut {
		if mb == nil {
			continue
		}
		if tr := mb.tr.Load(); tr != nil {
			tr.cut.Store(true)
		}
	}
	s.mu.Lock()
	for k, i := range members {
		if cut[k] == nil {
			continue
		}
		cfg := vfs.CrashCloneCfg{UnsyncedDataPercent: s.keep}
		if s.keep > 0 {
			cfg.RNG = rand.New(rand.NewPCG(s.rnd.Uint64(), 1))
		}
		s.fs[i] = s.fs[i].CrashClone(cfg)
	}
	s.mu.Unlock()
	return cut
}

// stopCut stops the goroutines of members cut by cutPower.
func (s *Set) stopCut(members []int, cut []*member) {
	for k, mb := range cut {
		if mb != nil {
			s.stopMember(members[k], mb, " after its power cut")
		}
	}
}

// KeepUnsynced sets the percentage of unsynced data the next power cuts
// keep (Options.KeepUnsynced).
func (s *Set) KeepUnsynced(percent int) {
	s.mu.Lock()
	s.keep = percent
	s.mu.Unlock()
}

// cutTransport is a member's transport that a power cut silences.
type cutTransport struct {
	repl.Transport
	cut atomic.Bool
}

func (t *cutTransport) Send(msgs []*pb.Message) {
	if !t.cut.Load() {
		t.Transport.Send(msgs)
	}
}

// SetSnapshotStreamer passes the member's snapshots to the network's
// endpoint (repl's streaming transports).
func (t *cutTransport) SetSnapshotStreamer(st repl.SnapshotStreamer) {
	if sx, ok := t.Transport.(interface {
		SetSnapshotStreamer(repl.SnapshotStreamer)
	}); ok {
		sx.SetSnapshotStreamer(st)
	}
}

// Restart starts a killed or power-cut member again on its data
// directory.
func (s *Set) Restart(i int) { s.start(i, false) }

// Pause freezes member i's clock and cuts it off the network (SIGSTOP).
func (s *Set) Pause(i int) {
	s.mu.Lock()
	s.paused[i] = true
	s.mu.Unlock()
	s.Net.Isolate(raftID(i))
}

// Resume undoes Pause (and every other partition: the network heals).
func (s *Set) Resume(i int) {
	s.mu.Lock()
	s.paused[i] = false
	s.mu.Unlock()
	s.Net.Heal()
}

// SkewClock makes member i's clock run at rate times the others'.
func (s *Set) SkewClock(i int, rate float64) {
	s.mu.Lock()
	s.rates[i] = rate
	s.mu.Unlock()
}

func (s *Set) close() {
	for i := range s.dirs {
		s.Kill(i)
	}
	close(s.stop)
	s.wg.Wait()
	s.Net.Close()
}
