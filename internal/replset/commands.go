package replset

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/raft/v3"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/repl"
)

// MongoDB's member states (replSetGetStatus's state and stateStr).
const (
	stateStartup   = 0
	statePrimary   = 1
	stateSecondary = 2
	stateStartup2  = 5 // catching up: a voter still a Raft learner, or installing a snapshot
	stateUnknown   = 6
	stateDown      = 8
	stateRemoved   = 10
)

var stateNames = map[int]string{0: "STARTUP", 1: "PRIMARY", 2: "SECONDARY", 5: "STARTUP2", 6: "UNKNOWN", 8: "(not reachable/healthy)", 10: "REMOVED"}

// isSelf reports whether host names this server: its port, and a host
// that is a loopback name or address, this machine's name, or the bound
// address.
func (m *Member) isSelf(host string) bool {
	h, p, err := net.SplitHostPort(host)
	if err != nil || p != strconv.Itoa(m.opts.Port) {
		return false
	}
	if h == "localhost" || h == m.opts.BindIP {
		return true
	}
	if name, err := os.Hostname(); err == nil && h == name {
		return true
	}
	ip := net.ParseIP(h)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// selfIn returns this server's member in cfg.
func (m *Member) selfIn(cfg *Config) (MemberConfig, bool) {
	var found []MemberConfig
	for _, mc := range cfg.Members {
		if m.isSelf(mc.Host) {
			found = append(found, mc)
		}
	}
	if len(found) != 1 {
		return MemberConfig{}, false
	}
	return found[0], true
}

// Initiate runs replSetInitiate: it checks the configuration and that
// every other member answers on its port, bootstraps a one-voter Raft
// group of this member, waits to lead it, stores the configuration
// through it, and returns; the primary's reconcile loop then adds the
// other members, learners first.
// checkConfigSvr refuses a configuration whose configsvr disagrees with
// this member's --configsvr, as mongod does.
func (m *Member) checkConfigSvr(cfg *Config) error {
	switch {
	case cfg.ConfigSvr && !m.opts.ConfigSvr:
		return invalid("Nodes being used for config servers must be started with the --configsvr flag")
	case !cfg.ConfigSvr && m.opts.ConfigSvr:
		return invalid("Nodes started with the --configsvr flag must have configsvr:true in their config")
	}
	return nil
}

func (m *Member) Initiate(ctx context.Context, doc bsoncore.Document) error {
	if node, _ := m.nodeState(); node != nil || m.config() != nil {
		return mongoerr.New(mongoerr.AlreadyInitialized, "already initialized")
	}
	cfg, err := ParseConfig(doc)
	if err != nil {
		return err
	}
	if cfg.Name != m.opts.SetName {
		return invalid("Attempting to initiate a replica set with name %s, but command line reports %s; rejecting", cfg.Name, m.opts.SetName)
	}
	if err := m.checkConfigSvr(cfg); err != nil {
		return err
	}
	if cfg.Version != 1 {
		// MongoDB starts every set at version 1.
		cfg.Version = 1
	}
	self, ok := m.selfIn(cfg)
	if !ok {
		return mongoerr.New(mongoerr.NodeNotFound, "No host described in new configuration with {version: %d, term: 0} for replica set %s maps to this node", cfg.Version, cfg.Name)
	}
	if self.Votes == 0 {
		return invalid("This node, %s, with _id %d is not electable under the new configuration with {version: %d, term: 0} for replica set %s", self.Host, self.ID, cfg.Version, cfg.Name)
	}
	for _, mc := range cfg.Members {
		if mc.ID == self.ID {
			continue
		}
		if err := m.dial(mc.Host); err != nil {
			return mongoerr.New(mongoerr.NodeNotFound, "replSetInitiate quorum check failed because not all proposed set members responded affirmatively: %s failed with %v", mc.Host, err)
		}
	}
	if cfg.ReplicaSetID.IsZero() {
		cfg.ReplicaSetID = bson.NewObjectID()
	}
	if err := m.startNode(self.raftID(), []uint64{self.raftID()}); err != nil {
		return err
	}
	node, _ := m.nodeState()
	m.mu.Lock()
	m.tr.SetAddr(self.Host)
	m.mu.Unlock()
	// Raft refuses a campaign while the bootstrap's configuration entry is
	// committed but not yet applied, which is the case right after
	// startNode; asking again each few milliseconds while the node is
	// still a follower makes it primary at once instead of after an
	// election timeout (1-2 s). A single voter's campaign cannot disturb
	// anyone.
	deadline := time.Now().Add(10 * time.Second)
	for !m.primary.Load() {
		if time.Now().After(deadline) {
			return mongoerr.New(mongoerr.ExceededTimeLimit, "this node did not become primary of its new set in time")
		}
		if node.Status().Role == raft.StateFollower {
			if err := node.Campaign(); err != nil {
				return err
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	if holdsUserData(m.eng) {
		// As in MongoDB, the initiating member's data becomes the set's.
		// It is in no log entry: snapshot it before any member is added,
		// so every member starts from a snapshot holding it (and the log
		// holds nothing older than the snapshot).
		if err := node.Compact(); err != nil {
			return fmt.Errorf("replset: snapshot this member's data: %w", err)
		}
	}
	return m.writeConfig(cfg)
}

// Reconfig runs replSetReconfig (not forced): on the primary, a config of
// a higher version, the same set name, this member still in it, and at
// most one voting member added or removed; the reconcile loop then makes
// Raft's configuration follow, learners first.
func (m *Member) Reconfig(ctx context.Context, doc bsoncore.Document, force bool) error {
	if force {
		return mongoerr.New(mongoerr.InvalidOptions, "replSetReconfig force: true is not supported by Cairn (Raft changes membership only through its majority)")
	}
	old := m.config()
	if old == nil {
		return mongoerr.New(mongoerr.NotYetInitialized, "no replset config has been received")
	}
	if !m.primary.Load() {
		return notWritablePrimary()
	}
	cfg, err := ParseConfig(doc)
	if err != nil {
		return err
	}
	incompatible := func(f string, a ...any) error {
		return mongoerr.New(mongoerr.NewReplicaSetConfigurationIncompatible, f, a...)
	}
	if err := m.checkConfigSvr(cfg); err != nil {
		return err
	}
	if cfg.Name != old.Name {
		return incompatible("New and old configurations differ in replica set name; old was %s, and new is %s", old.Name, cfg.Name)
	}
	if cfg.Version <= old.Version {
		return incompatible("New config version %d must be greater than old version %d", cfg.Version, old.Version)
	}
	if _, ok := m.selfIn(cfg); !ok {
		return mongoerr.New(mongoerr.NodeNotFound, "No host described in new configuration with {version: %d} for replica set %s maps to this node", cfg.Version, cfg.Name)
	}
	changed := 0
	for _, mc := range cfg.Members {
		prev, ok := old.member(mc.raftID())
		if ok && prev.Host != mc.Host {
			return incompatible("New and old configurations both have members with _id of %d but in the new configuration the host is %s and in the old configuration it is %s", mc.ID, mc.Host, prev.Host)
		}
		if mc.Votes != prev.Votes {
			changed++
		}
	}
	for _, prev := range old.Members {
		if _, ok := cfg.member(prev.raftID()); !ok && prev.Votes == 1 {
			changed++
		}
	}
	if changed > 1 {
		return incompatible("Non force replica set reconfig can only add or remove at most 1 voting member.")
	}
	if err := m.quorumCheck(cfg); err != nil {
		return err
	}
	if cfg.ReplicaSetID.IsZero() {
		cfg.ReplicaSetID = old.ReplicaSetID
	}
	return m.writeConfig(cfg)
}

// quorumCheck is MongoDB's reconfig quorum check: a majority of the new
// configuration's voters must answer, or the reconfig is refused
// (NodeNotFound) and nothing changes. A member of the current Raft group
// answers when Raft heard from it within the election timeout
// (RecentActive); any other must accept a connection on its port.
func (m *Member) quorumCheck(cfg *Config) error {
	node, self := m.nodeState()
	progress := node.Progress()
	var voters, answered []string
	var bad []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, mc := range cfg.Members {
		if mc.Votes == 0 {
			continue
		}
		voters = append(voters, mc.Host)
		if pr, ok := progress[mc.raftID()]; mc.raftID() == self || ok && pr.RecentActive {
			answered = append(answered, mc.Host)
			continue
		} else if ok {
			bad = append(bad, mc.Host+" failed with no heartbeat within the election timeout")
			continue
		}
		wg.Add(1)
		go func(host string) {
			defer wg.Done()
			err := m.dial(host)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s failed with %v", host, err))
				return
			}
			answered = append(answered, host)
		}(mc.Host)
	}
	wg.Wait()
	need := len(voters)/2 + 1
	if len(answered) >= need {
		return nil
	}
	slices.Sort(answered)
	slices.Sort(bad)
	msg := fmt.Sprintf("Quorum check failed because not enough voting nodes responded; required %d but only the following %d voting nodes responded: %s", need, len(answered), strings.Join(answered, ", "))
	if len(bad) > 0 {
		msg += "; the following nodes did not respond affirmatively: " + strings.Join(bad, ", ")
	}
	return mongoerr.New(mongoerr.NodeNotFound, "%s", msg)
}

// StepDown runs replSetStepDown: it freezes this member for stepDownSecs,
// hands leadership to the most caught-up voter and waits up to
// secondaryCatchUpPeriodSecs for it to take over.
func (m *Member) StepDown(ctx context.Context, stepDownSecs, catchUpSecs int64) error {
	node, self := m.nodeState()
	if node == nil || !m.primary.Load() {
		return mongoerr.New(mongoerr.NotWritablePrimary, "not primary so can't step down")
	}
	if catchUpSecs > stepDownSecs {
		return mongoerr.New(mongoerr.BadValue, "stepdown period must be longer than secondaryCatchUpPeriodSecs")
	}
	var best uint64
	var bestMatch uint64
	st := node.Status()
	for id, pr := range node.Progress() {
		if id != self && !pr.Learner && pr.RecentActive && (best == 0 || pr.Match > bestMatch) && slices.Contains(st.Voters, id) {
			best, bestMatch = id, pr.Match
		}
	}
	if best == 0 {
		return mongoerr.New(mongoerr.ExceededTimeLimit, "No electable secondaries caught up as of %s. Please use the replSetStepDown command with the argument {force: true} to force node to step down.", time.Now().UTC().Format(time.RFC3339))
	}
	node.Freeze(time.Now().Add(time.Duration(stepDownSecs) * time.Second))
	if err := node.TransferLeadership(best); err != nil {
		return replError(err)
	}
	deadline := time.Now().Add(time.Duration(max(catchUpSecs, 1)) * time.Second)
	for time.Now().Before(deadline) {
		if rc := m.role.Load(); rc != nil && rc.Lead != self {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	node.Freeze(time.Time{})
	return mongoerr.New(mongoerr.ExceededTimeLimit, "No electable secondaries caught up in time")
}

// Freeze runs replSetFreeze.
func (m *Member) Freeze(secs int64) (string, error) {
	node, _ := m.nodeState()
	if node == nil {
		return "", mongoerr.New(mongoerr.NotYetInitialized, "no replset config has been received")
	}
	if rc := m.role.Load(); rc != nil && (rc.Role == repl.Role(2) || rc.Role == repl.Role(3)) {
		return "", mongoerr.New(mongoerr.NotSecondary, "cannot freeze node when primary or running for election. state: %s", stateStr(m.myState()))
	}
	if secs == 0 {
		node.Freeze(time.Time{})
		return "unfreezing", nil
	}
	node.Freeze(time.Now().Add(time.Duration(secs) * time.Second))
	return "", nil
}

// myState is this member's MongoDB state.
func (m *Member) myState() int {
	node, id := m.nodeState()
	cfg := m.config()
	if node == nil || cfg == nil {
		return stateStartup
	}
	mc, ok := cfg.member(id)
	if !ok {
		return stateRemoved
	}
	if m.primary.Load() {
		return statePrimary
	}
	if m.installing.Load() || mc.Votes == 1 && slices.Contains(node.Status().Learners, id) {
		// MongoDB's initial sync: a member catching up serves no reads.
		return stateStartup2
	}
	return stateSecondary
}

func stateStr(s int) string { return stateNames[s] }

// opTime is a member's {ts, t} for an applied index in replSetGetStatus:
// a stand-in (ts the primary's wall-clock second of the group and the low
// 32 bits of its Raft index, t the Raft term), since Raft reports other
// members' progress as log indexes, not cluster times. hello's lastWrite
// gives this member's real one (the applied groups' cluster time).
func opTime(wallMillis int64, index, term uint64) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().
		AppendTimestamp("ts", uint32(wallMillis/1000), uint32(index)).
		AppendInt64("t", int64(term)).Build()
}

// Status answers replSetGetStatus.
func (m *Member) Status() (bsoncore.Document, error) {
	node, self := m.nodeState()
	cfg := m.config()
	if node == nil || cfg == nil {
		return nil, mongoerr.New(mongoerr.NotYetInitialized, "no replset config has been received")
	}
	st := node.Status()
	wall := m.lastWall.Load()
	applied := opTime(wall, st.Applied, st.Term)
	progress := node.Progress() // nil unless leader
	leaderHost := ""
	members := bsoncore.NewArrayBuilder()
	for _, mc := range cfg.Members {
		id := mc.raftID()
		state, health := stateUnknown, -1.0
		switch {
		case id == self:
			state, health = m.myState(), 1
		case id == st.Lead:
			state, health = statePrimary, 1
		case progress != nil:
			if pr, ok := progress[id]; ok && pr.RecentActive && pr.Learner && mc.Votes == 1 {
				state, health = stateStartup2, 1
			} else if ok && pr.RecentActive {
				state, health = stateSecondary, 1
			} else {
				state, health = stateDown, 0
			}
		}
		if id == st.Lead {
			leaderHost = mc.Host
		}
		b := bsoncore.NewDocumentBuilder().
			AppendInt32("_id", int32(mc.ID)).
			AppendString("name", mc.Host).
			AppendDouble("health", health).
			AppendInt32("state", int32(state)).
			AppendString("stateStr", stateStr(state))
		if id == self {
			b.AppendInt64("uptime", int64(time.Since(m.started).Seconds())).
				AppendDocument("optime", applied).
				AppendDateTime("optimeDate", wall).
				AppendBoolean("self", true)
		} else if pr, ok := progress[id]; ok {
			b.AppendDocument("optime", opTime(wall, pr.Match, st.Term))
		}
		if state == statePrimary {
			b.AppendObjectID("electionId", electionID(st.Term))
		}
		members.AppendDocument(b.Build())
	}
	majority := cfg.voters()/2 + 1
	return bsoncore.NewDocumentBuilder().
		AppendString("set", cfg.Name).
		AppendDateTime("date", time.Now().UnixMilli()).
		AppendInt32("myState", int32(m.myState())).
		AppendInt64("term", int64(st.Term)).
		AppendString("syncSourceHost", leaderHostIfSecondary(leaderHost, st.Lead != self)).
		AppendInt64("heartbeatIntervalMillis", cfg.HeartbeatIntervalMillis).
		AppendInt32("majorityVoteCount", int32(majority)).
		AppendInt32("writeMajorityCount", int32(majority)).
		AppendInt32("votingMembersCount", int32(cfg.voters())).
		AppendInt32("writableVotingMembersCount", int32(cfg.voters())).
		AppendDocument("optimes", bsoncore.NewDocumentBuilder().
			AppendDocument("lastCommittedOpTime", opTime(wall, st.Commit, st.Term)).
			AppendDocument("appliedOpTime", applied).
			AppendDocument("durableOpTime", applied).Build()).
		AppendArray("members", members.Build()).
		Build(), nil
}

func leaderHostIfSecondary(h string, secondary bool) string {
	if secondary {
		return h
	}
	return ""
}

// electionID is MongoDB's electionId for a term: 0x7fffffff, then the
// term as 8 bytes big-endian (drivers compare it to order primaries).
func electionID(term uint64) bson.ObjectID {
	var o bson.ObjectID
	o[0], o[1], o[2], o[3] = 0x7f, 0xff, 0xff, 0xff
	binary.BigEndian.PutUint64(o[4:], term)
	return o
}

// ConfigDocument answers replSetGetConfig.
func (m *Member) ConfigDocument() (bsoncore.Document, error) {
	cfg := m.config()
	if cfg == nil {
		return nil, mongoerr.New(mongoerr.NotYetInitialized, "no replset config has been received")
	}
	var term uint64
	if node, _ := m.nodeState(); node != nil {
		term = node.Status().Term
	}
	return cfg.Document(term), nil
}

// CanWrite is nil on the primary, NotWritablePrimary elsewhere.
func (m *Member) CanWrite() error {
	if m.primary.Load() {
		return nil
	}
	return notWritablePrimary()
}

// CanRead is nil on the primary, and on a secondary when the client
// allows secondary reads; NotPrimaryNoSecondaryOk on a secondary
// otherwise, NotPrimaryOrSecondary on a member in neither state.
func (m *Member) CanRead(secondaryOk bool) error {
	switch m.myState() {
	case statePrimary:
		return nil
	case stateSecondary:
		if secondaryOk {
			return nil
		}
		return mongoerr.New(mongoerr.NotPrimaryNoSecondaryOk, "not primary and secondaryOk=false")
	}
	return mongoerr.New(mongoerr.NotPrimaryOrSecondary, "node is not in primary or recovering state")
}

// holdsUserData reports whether the member holds collections of its own:
// every node makes local.oplog.rs and the config database's collections
// itself, the same on every member, so those do not count.
func holdsUserData(eng *engine.Engine) bool {
	for _, c := range eng.Catalog().Collections("") {
		if c.DB != "local" && c.DB != "config" {
			return true
		}
	}
	return false
}
