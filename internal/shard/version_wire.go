package shard

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/hlc"
)

// WireVersion is a shard version as routers send it to shards in a
// command's shardVersion field and shards report it in StaleConfig's
// errInfo, in MongoDB 7.0's shape {e: epoch, t: timestamp, v:
// Timestamp(major, minor)}. The zero value is UNSHARDED (the version of a
// collection that is not sharded: all zeros).
type WireVersion struct {
	Epoch     bson.ObjectID
	Timestamp hlc.Timestamp // the collection's config.collections timestamp
	Version   Version
}

// Unsharded is the shardVersion a router attaches for an unsharded
// collection.
var Unsharded = WireVersion{}

// IsUnsharded reports whether v is UNSHARDED.
func (v WireVersion) IsUnsharded() bool { return v == Unsharded }

// Equal reports whether two versions name the same routing state.
func (v WireVersion) Equal(w WireVersion) bool { return v == w }

func (v WireVersion) String() string {
	return fmt.Sprintf("%s||%s||%s", v.Version, v.Epoch.Hex(), v.Timestamp)
}

// Doc is {e, t, v}.
func (v WireVersion) Doc() bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendObjectID("e", v.Epoch).
		AppendTimestamp("t", v.Timestamp.T(), v.Timestamp.I()).
		AppendTimestamp("v", v.Version.Major, v.Version.Minor).Build()
}

// ParseWireVersion reads {e, t, v}.
func ParseWireVersion(val bsoncore.Value) (WireVersion, error) {
	d, ok := val.DocumentOK()
	if !ok {
		return WireVersion{}, fmt.Errorf("shard: shardVersion must be a document, not %s", val.Type)
	}
	var w WireVersion
	if w.Epoch, ok = d.Lookup("e").ObjectIDOK(); !ok {
		return WireVersion{}, fmt.Errorf("shard: shardVersion %s lacks an ObjectId e", d)
	}
	t, i, ok := d.Lookup("t").TimestampOK()
	if !ok {
		return WireVersion{}, fmt.Errorf("shard: shardVersion %s lacks a timestamp t", d)
	}
	w.Timestamp = hlc.New(t, i)
	major, minor, ok := d.Lookup("v").TimestampOK()
	if !ok {
		return WireVersion{}, fmt.Errorf("shard: shardVersion %s lacks a Timestamp v", d)
	}
	w.Version = Version{major, minor}
	return w, nil
}

// ShardWireVersion is shard's version of m (the greatest version of the
// chunks it owns; zero when it owns none, with the collection's epoch and
// timestamp), as a router sends it to that shard.
func (m *Map) ShardWireVersion(shard string, timestamp hlc.Timestamp) WireVersion {
	return WireVersion{Epoch: m.Epoch, Timestamp: timestamp, Version: m.ShardVersion(shard)}
}

// StaleConfigInfo is StaleConfig's (13388) errInfo: {ns, vReceived,
// vWanted, shardId}; vWanted is left out when the shard does not know its
// own version (MongoDB omits it while the shard refreshes).
func StaleConfigInfo(ns string, received WireVersion, wanted *WireVersion, shardID string) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendString("ns", ns).AppendDocument("vReceived", received.Doc())
	if wanted != nil {
		b.AppendDocument("vWanted", wanted.Doc())
	}
	return b.AppendString("shardId", shardID).Build()
}

// StaleConfig is a parsed StaleConfig errInfo.
type StaleConfig struct {
	NS       string
	Received WireVersion
	Wanted   *WireVersion
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
	if s.Received, err = ParseWireVersion(d.Lookup("vReceived")); err != nil {
		return StaleConfig{}, err
	}
	if v, err := d.LookupErr("vWanted"); err == nil {
		w, err := ParseWireVersion(v)
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
