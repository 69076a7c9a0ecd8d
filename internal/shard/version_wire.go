package shard

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// The versions routers and shards exchange in MongoDB 7.0's wire shapes:
// shardVersion (ShardVersion), databaseVersion (DatabaseVersion) and
// StaleConfig's fields, one definition for the router (package router) and
// the shard side (package shardsvr).

// ShardVersion is the shardVersion a router attaches to a command, in
// MongoDB 7.0's wire shape {e: epoch, t: timestamp, v: Timestamp(major,
// minor)}: the placement version of the shard it targets, of one
// incarnation of the collection (epoch and timestamp).
type ShardVersion struct {
	Epoch     bson.ObjectID
	Timestamp hlc.Timestamp
	V         Version
}

// Doc is the wire shape.
func (sv ShardVersion) Doc() bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendObjectID("e", sv.Epoch)
	appendTS(b, "t", sv.Timestamp)
	return b.AppendTimestamp("v", sv.V.Major, sv.V.Minor).Build()
}

// ParseShardVersion reads the wire shape.
func ParseShardVersion(v bsoncore.Value) (ShardVersion, error) {
	var sv ShardVersion
	d, ok := v.DocumentOK()
	if !ok {
		return sv, mongoerr.New(mongoerr.TypeMismatch, "shardVersion must be a document {e, t, v}, not %s", v.Type)
	}
	if sv.Epoch, ok = d.Lookup("e").ObjectIDOK(); !ok {
		return sv, mongoerr.New(mongoerr.BadValue, "shardVersion %s lacks its epoch e", d)
	}
	t, i, ok := d.Lookup("t").TimestampOK()
	if !ok {
		return sv, mongoerr.New(mongoerr.BadValue, "shardVersion %s lacks its timestamp t", d)
	}
	sv.Timestamp = hlc.New(t, i)
	major, minor, ok := d.Lookup("v").TimestampOK()
	if !ok {
		return sv, mongoerr.New(mongoerr.BadValue, "shardVersion %s lacks its version v", d)
	}
	sv.V = Version{major, minor}
	return sv, nil
}

// Compatible reports whether a command stamped with sv may run on a shard
// whose version is have: the same incarnation and the same major version
// (moves bump the major; splits and merges, which move no data, only the
// minor), as MongoDB's ChunkVersion::isWriteCompatibleWith.
func (sv ShardVersion) Compatible(have ShardVersion) bool {
	return sv.Epoch == have.Epoch && sv.Timestamp == have.Timestamp && sv.V.Major == have.V.Major
}

// StaleConfigError is MongoDB's StaleConfig (13388) error: the reply carries
// ns, vReceived, vWanted (absent when the shard does not know its own
// version) and shardId at its top level, as mongod's command replies do,
// and the same fields in errInfo, as a write error carries them.
func StaleConfigError(ns string, received ShardVersion, wanted *ShardVersion, shardID, why string) *mongoerr.Error {
	info := StaleConfigInfo(ns, received, wanted, shardID)
	e := mongoerr.New(mongoerr.StaleConfig, "shard version mismatch on %s for %s: %s", shardID, ns, why)
	els, _ := info.Elements()
	for _, el := range els {
		e.Extra = append(e.Extra, mongoerr.Field{Name: el.Key(), Value: bson.RawValue{Type: bson.Type(el.Value().Type), Value: el.Value().Data}})
	}
	e.Extra = append(e.Extra, mongoerr.Field{Name: "errInfo", Value: bson.Raw(info)})
	return e
}

// Unsharded is the shardVersion a router attaches for an unsharded
// collection (ShardVersion's zero value: all zeros, MongoDB's UNSHARDED).
var Unsharded = ShardVersion{}

// IsUnsharded reports whether v is UNSHARDED.
func (v ShardVersion) IsUnsharded() bool { return v == Unsharded }

// Equal reports whether two versions name the same routing state.
func (v ShardVersion) Equal(w ShardVersion) bool { return v == w }

func (v ShardVersion) String() string {
	return fmt.Sprintf("%s||%s||%s", v.V, v.Epoch.Hex(), v.Timestamp)
}

// ShardVersionFor is shard's shardVersion of m (the greatest version of
// the chunks it owns; zero when it owns none, with the collection's epoch
// and timestamp), as a router sends it to that shard and the shard checks
// it.
func (m *Map) ShardVersionFor(shard string, timestamp hlc.Timestamp) ShardVersion {
	return ShardVersion{Epoch: m.Epoch, Timestamp: timestamp, V: m.ShardVersion(shard)}
}

// StaleConfigInfo is StaleConfig's (13388) errInfo: {ns, vReceived,
// vWanted, shardId}; vWanted is left out when the shard does not know its
// own version (MongoDB omits it while the shard refreshes).
func StaleConfigInfo(ns string, received ShardVersion, wanted *ShardVersion, shardID string) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendString("ns", ns).AppendDocument("vReceived", received.Doc())
	if wanted != nil {
		b.AppendDocument("vWanted", wanted.Doc())
	}
	return b.AppendString("shardId", shardID).Build()
}

// StaleConfig is a parsed StaleConfig errInfo.
type StaleConfig struct {
	NS       string
	Received ShardVersion
	Wanted   *ShardVersion
	ShardID  string
}

// ParseStaleConfigInfo reads StaleConfig's errInfo.
func ParseStaleConfigInfo(d bsoncore.Document) (StaleConfig, error) {
	var s StaleConfig
	var ok bool
	if s.NS, ok = d.Lookup("ns").StringValueOK(); !ok {
		return StaleConfig{}, fmt.Errorf("shard: StaleConfig errInfo %s lacks ns", d)
	}
	s.ShardID, _ = d.Lookup("shardId").StringValueOK()
	var err error
	if s.Received, err = ParseShardVersion(d.Lookup("vReceived")); err != nil {
		return StaleConfig{}, err
	}
	if v, err := d.LookupErr("vWanted"); err == nil {
		w, err := ParseShardVersion(v)
		if err != nil {
			return StaleConfig{}, err
		}
		s.Wanted = &w
	}
	return s, nil
}

// DatabaseVersion is a database's version as config.databases records it
// and routers send it (databaseVersion): {uuid, timestamp, lastMod}.
type DatabaseVersion struct {
	UUID      [16]byte
	Timestamp hlc.Timestamp
	LastMod   int32
}

// Doc is {uuid, timestamp, lastMod}.
func (v DatabaseVersion) Doc() bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendBinary("uuid", bson.TypeBinaryUUID, v.UUID[:]).
		AppendTimestamp("timestamp", v.Timestamp.T(), v.Timestamp.I()).AppendInt32("lastMod", v.LastMod).Build()
}

// ParseDatabaseVersion reads {uuid, timestamp, lastMod}.
func ParseDatabaseVersion(val bsoncore.Value) (DatabaseVersion, error) {
	d, ok := val.DocumentOK()
	if !ok {
		return DatabaseVersion{}, fmt.Errorf("shard: databaseVersion must be a document, not %s", val.Type)
	}
	var v DatabaseVersion
	sub, data, ok := d.Lookup("uuid").BinaryOK()
	if !ok || sub != bson.TypeBinaryUUID || len(data) != 16 {
		return DatabaseVersion{}, fmt.Errorf("shard: databaseVersion %s lacks a uuid", d)
	}
	copy(v.UUID[:], data)
	t, i, ok := d.Lookup("timestamp").TimestampOK()
	if !ok {
		return DatabaseVersion{}, fmt.Errorf("shard: databaseVersion %s lacks a timestamp", d)
	}
	v.Timestamp = hlc.New(t, i)
	n, ok := d.Lookup("lastMod").AsInt64OK()
	if !ok {
		return DatabaseVersion{}, fmt.Errorf("shard: databaseVersion %s lacks lastMod", d)
	}
	v.LastMod = int32(n)
	return v, nil
}
