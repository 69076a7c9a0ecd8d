package shard

import (
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
)

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
	b := bsoncore.NewDocumentBuilder().AppendString("ns", ns).AppendDocument("vReceived", received.Doc())
	if wanted != nil {
		b.AppendDocument("vWanted", wanted.Doc())
	}
	info := b.AppendString("shardId", shardID).Build()
	e := mongoerr.New(mongoerr.StaleConfig, "shard version mismatch on %s for %s: %s", shardID, ns, why)
	els, _ := info.Elements()
	for _, el := range els {
		e.Extra = append(e.Extra, mongoerr.Field{Name: el.Key(), Value: bson.RawValue{Type: bson.Type(el.Value().Type), Value: el.Value().Data}})
	}
	e.Extra = append(e.Extra, mongoerr.Field{Name: "errInfo", Value: bson.Raw(info)})
	return e
}
