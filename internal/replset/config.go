package replset

import (
	"fmt"
	"net"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// Config is a replica set configuration, MongoDB's document as Cairn
// honours it (see "Configuration" in the package comment).
type Config struct {
	Name    string
	Version int64
	Members []MemberConfig
	// ElectionTimeoutMillis and HeartbeatIntervalMillis are settings'
	// fields of the same names: Raft's election timeout and heartbeat.
	ElectionTimeoutMillis   int64
	HeartbeatIntervalMillis int64
	ChainingAllowed         bool
	ReplicaSetID            bson.ObjectID
	// ConfigSvr is configsvr: the set is a sharded cluster's config
	// servers; its members must run with --configsvr, and only they.
	ConfigSvr bool
}

// MemberConfig is one member of a Config.
type MemberConfig struct {
	ID       int
	Host     string
	Priority float64 // 1, or 0 for a non-voting member
	Votes    int     // 1 (a Raft voter) or 0 (a Raft learner)
	Hidden   bool
}

// raftID is a member's Raft id: its _id plus one (Raft reserves 0).
func (m MemberConfig) raftID() uint64 { return uint64(m.ID) + 1 }

const (
	defaultElectionTimeoutMillis   = 1000
	defaultHeartbeatIntervalMillis = 100
)

func invalid(format string, args ...any) error {
	return mongoerr.New(mongoerr.InvalidReplicaSetConfig, format, args...)
}

// ParseConfig reads and validates a configuration document as
// replSetInitiate and replSetReconfig receive it. Fields MongoDB has and
// Cairn cannot honour are refused (InvalidReplicaSetConfig) rather than
// ignored.
func ParseConfig(d bsoncore.Document) (*Config, error) {
	c := &Config{ChainingAllowed: true, ElectionTimeoutMillis: defaultElectionTimeoutMillis, HeartbeatIntervalMillis: defaultHeartbeatIntervalMillis}
	elems, err := d.Elements()
	if err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "replica set configuration: %v", err)
	}
	haveMembers := false
	for _, el := range elems {
		v := el.Value()
		switch el.Key() {
		case "_id":
			s, ok := v.StringValueOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "\"_id\" had the wrong type. Expected string, found %s", v.Type)
			}
			c.Name = s
		case "version":
			n, ok := v.AsInt64OK()
			if !ok || n < 1 {
				return nil, invalid("version field value of %v is out of range", v)
			}
			c.Version = n
		case "term", "protocolVersion":
			if n, ok := v.AsInt64OK(); !ok || el.Key() == "protocolVersion" && n != 1 {
				return nil, invalid("%s must be %s, got %v", el.Key(), map[string]string{"term": "a number", "protocolVersion": "1"}[el.Key()], v)
			}
		case "writeConcernMajorityJournalDefault":
			if b, ok := v.BooleanOK(); !ok || !b {
				return nil, invalid("writeConcernMajorityJournalDefault must be true: every Cairn member syncs its log before it counts toward a majority")
			}
		case "configsvr":
			b, ok := v.BooleanOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "\"configsvr\" had the wrong type. Expected bool, found %s", v.Type)
			}
			c.ConfigSvr = b
		case "members":
			arr, ok := v.ArrayOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "\"members\" had the wrong type. Expected array, found %s", v.Type)
			}
			vals, _ := arr.Values()
			for _, mv := range vals {
				md, ok := mv.DocumentOK()
				if !ok {
					return nil, mongoerr.New(mongoerr.TypeMismatch, "each member of \"members\" must be an object")
				}
				m, err := parseMember(md)
				if err != nil {
					return nil, err
				}
				c.Members = append(c.Members, m)
			}
			haveMembers = true
		case "settings":
			sd, ok := v.DocumentOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "\"settings\" had the wrong type. Expected object, found %s", v.Type)
			}
			if err := c.parseSettings(sd); err != nil {
				return nil, err
			}
		default:
			return nil, mongoerr.New(mongoerr.UnknownField, "BSON field 'ReplSetConfig.%s' is an unknown field.", el.Key())
		}
	}
	if c.Name == "" {
		return nil, invalid("replica set configuration must have a non-empty _id field")
	}
	if !haveMembers || len(c.Members) == 0 {
		return nil, invalid("replica set configuration must have a non-empty members array")
	}
	if c.Version == 0 {
		c.Version = 1
	}
	ids, hosts, voters := map[int]bool{}, map[string]bool{}, 0
	for _, m := range c.Members {
		if ids[m.ID] {
			return nil, invalid("Found two member configurations with same _id field, members.%d._id == %d", m.ID, m.ID)
		}
		if hosts[m.Host] {
			return nil, invalid("Found two member configurations with same host field, host == %s", m.Host)
		}
		ids[m.ID], hosts[m.Host] = true, true
		voters += m.Votes
	}
	if voters == 0 {
		return nil, invalid("Replica set configuration must contain at least one voting member")
	}
	if voters > 7 {
		return nil, invalid("Replica set configuration contains %d voting members, but must be at least 1 and no more than 7", voters)
	}
	return c, nil
}

func parseMember(d bsoncore.Document) (MemberConfig, error) {
	m := MemberConfig{ID: -1, Priority: 1, Votes: 1}
	elems, _ := d.Elements()
	for _, el := range elems {
		v := el.Value()
		switch el.Key() {
		case "_id":
			n, ok := v.AsInt64OK()
			if !ok || n < 0 || n > 255 {
				return m, mongoerr.New(mongoerr.BadValue, "_id field value of %v is out of range.", v)
			}
			m.ID = int(n)
		case "host":
			s, ok := v.StringValueOK()
			if !ok {
				return m, mongoerr.New(mongoerr.TypeMismatch, "\"host\" had the wrong type. Expected string, found %s", v.Type)
			}
			h, err := canonicalHost(s)
			if err != nil {
				return m, err
			}
			m.Host = h
		case "priority":
			f, ok := v.AsFloat64OK()
			if !ok || f != 0 && f != 1 {
				return m, invalid("priority %v: Cairn's members have priority 1, or 0 with votes 0 (Raft elects any voter; it has no priorities)", v)
			}
			m.Priority = f
		case "votes":
			n, ok := v.AsInt64OK()
			if !ok || n != 0 && n != 1 {
				return m, invalid("votes field value is %v but must be 0 or 1", v)
			}
			m.Votes = int(n)
		case "hidden":
			b, ok := v.BooleanOK()
			if !ok {
				return m, mongoerr.New(mongoerr.TypeMismatch, "\"hidden\" had the wrong type. Expected bool, found %s", v.Type)
			}
			m.Hidden = b
		case "arbiterOnly":
			if b, ok := v.BooleanOK(); !ok || b {
				return m, invalid("arbiterOnly: Cairn has no arbiters (every Raft voter holds the data)")
			}
		case "buildIndexes":
			if b, ok := v.BooleanOK(); !ok || !b {
				return m, invalid("buildIndexes must be true: every member applies the same commit groups")
			}
		case "secondaryDelaySecs", "slaveDelay":
			if n, ok := v.AsInt64OK(); !ok || n != 0 {
				return m, invalid("%s: Cairn has no delayed members", el.Key())
			}
		case "tags":
			if td, ok := v.DocumentOK(); !ok || len(td) > 5 {
				return m, invalid("tags: Cairn has no member tags yet (an empty document only)")
			}
		default:
			return m, mongoerr.New(mongoerr.UnknownField, "BSON field 'MemberConfig.%s' is an unknown field.", el.Key())
		}
	}
	if m.ID < 0 {
		return m, mongoerr.New(mongoerr.NoSuchKey, "Missing expected field \"_id\"")
	}
	if m.Host == "" {
		return m, mongoerr.New(mongoerr.NoSuchKey, "Missing expected field \"host\"")
	}
	if m.Votes == 0 && m.Priority != 0 {
		return m, invalid("priority must be 0 when non-voting (votes:0), member _id %d", m.ID)
	}
	if m.Votes == 1 && m.Priority == 0 {
		return m, invalid("priority 0 with votes 1: Cairn cannot keep a Raft voter from being elected; give the member votes 0 too")
	}
	if m.Hidden && m.Priority != 0 {
		return m, invalid("priority must be 0 when hidden=true, member _id %d", m.ID)
	}
	return m, nil
}

func (c *Config) parseSettings(d bsoncore.Document) error {
	elems, _ := d.Elements()
	for _, el := range elems {
		v := el.Value()
		switch el.Key() {
		case "electionTimeoutMillis", "heartbeatIntervalMillis":
			n, ok := v.AsInt64OK()
			if !ok || n < 10 || n > 3_600_000 {
				return invalid("settings.%s must be a number of milliseconds from 10, got %v", el.Key(), v)
			}
			// A member's Raft ticks are set when its node starts, which
			// for a joining member is before it holds the configuration:
			// other values are refused until they can take effect.
			if def := map[string]int64{"electionTimeoutMillis": defaultElectionTimeoutMillis, "heartbeatIntervalMillis": defaultHeartbeatIntervalMillis}[el.Key()]; n != def {
				return invalid("settings.%s: Cairn's members use %d ms; other values are not supported yet", el.Key(), def)
			}
			if el.Key() == "electionTimeoutMillis" {
				c.ElectionTimeoutMillis = n
			} else {
				c.HeartbeatIntervalMillis = n
			}
		case "chainingAllowed":
			// Raft's leader replicates to every member itself, which is
			// what chainingAllowed: false asks for and what true allows.
			b, ok := v.BooleanOK()
			if !ok {
				return mongoerr.New(mongoerr.TypeMismatch, "\"chainingAllowed\" had the wrong type. Expected bool, found %s", v.Type)
			}
			c.ChainingAllowed = b
		case "replicaSetId":
			oid, ok := v.ObjectIDOK()
			if !ok {
				return mongoerr.New(mongoerr.TypeMismatch, "\"replicaSetId\" had the wrong type. Expected objectId, found %s", v.Type)
			}
			c.ReplicaSetID = oid
		default:
			return invalid("settings.%s: not supported by Cairn's replica sets", el.Key())
		}
	}
	if c.HeartbeatIntervalMillis*2 > c.ElectionTimeoutMillis {
		return invalid("settings.electionTimeoutMillis (%d) must be at least twice heartbeatIntervalMillis (%d)", c.ElectionTimeoutMillis, c.HeartbeatIntervalMillis)
	}
	return nil
}

// canonicalHost checks a member's "host:port" (the port defaults to
// 27017, as MongoDB's).
func canonicalHost(s string) (string, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		host, port = s, "27017"
	}
	if host == "" {
		return "", invalid("host %q has no host name", s)
	}
	if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
		return "", mongoerr.New(mongoerr.FailedToParse, "invalid port in host %q", s)
	}
	return net.JoinHostPort(host, port), nil
}

// Document is the configuration as replSetGetConfig returns it: every
// field it shows is one ParseConfig accepts, so rs.conf() edited and
// given back to rs.reconfig() (as rs.add() does) reads the same.
func (c *Config) Document(term uint64) bsoncore.Document {
	members := bsoncore.NewArrayBuilder()
	for _, m := range c.Members {
		members.AppendDocument(bsoncore.NewDocumentBuilder().
			AppendInt32("_id", int32(m.ID)).
			AppendString("host", m.Host).
			AppendBoolean("arbiterOnly", false).
			AppendBoolean("buildIndexes", true).
			AppendBoolean("hidden", m.Hidden).
			AppendDouble("priority", m.Priority).
			AppendDocument("tags", bsoncore.NewDocumentBuilder().Build()).
			AppendInt64("secondaryDelaySecs", 0).
			AppendInt32("votes", int32(m.Votes)).
			Build())
	}
	settings := bsoncore.NewDocumentBuilder().
		AppendBoolean("chainingAllowed", c.ChainingAllowed).
		AppendInt64("heartbeatIntervalMillis", c.HeartbeatIntervalMillis).
		AppendInt64("electionTimeoutMillis", c.ElectionTimeoutMillis).
		AppendObjectID("replicaSetId", c.ReplicaSetID)
	b := bsoncore.NewDocumentBuilder().
		AppendString("_id", c.Name).
		AppendInt32("version", int32(c.Version)).
		AppendInt64("term", int64(term))
	if c.ConfigSvr {
		b.AppendBoolean("configsvr", true)
	}
	return b.AppendArray("members", members.Build()).
		AppendInt32("protocolVersion", 1).
		AppendBoolean("writeConcernMajorityJournalDefault", true).
		AppendDocument("settings", settings.Build()).
		Build()
}

// member returns the member with Raft id id.
func (c *Config) member(id uint64) (MemberConfig, bool) {
	for _, m := range c.Members {
		if m.raftID() == id {
			return m, true
		}
	}
	return MemberConfig{}, false
}

// voters counts the voting members.
func (c *Config) voters() int {
	n := 0
	for _, m := range c.Members {
		n += m.Votes
	}
	return n
}

func (c *Config) String() string {
	return fmt.Sprintf("%s v%d (%d members)", c.Name, c.Version, len(c.Members))
}
