package shard

import (
	"bytes"
	"fmt"
	"sort"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/hlc"
)

// Collection is a sharded collection's config.collections entry, in
// MongoDB 7.0's shape (mongosh's sh.status() and tools read it).
type Collection struct {
	NS        string
	Epoch     bson.ObjectID
	Updated   time.Time     // lastmod
	Timestamp hlc.Timestamp // when it was sharded: chunks are found by UUID
	UUID      [16]byte
	Key       bsoncore.Document
	Unique    bool
	NoBalance bool
	// NoMigrations is config.collections' permitMigrations: false
	// (setAllowMigrations): neither moveChunk nor the balancer moves a
	// chunk, and the config servers commit no migration.
	NoMigrations bool
	// DefaultCollation is the collection's default collation when it is
	// not simple (nil otherwise), as config.collections' defaultCollation:
	// the router targets and merges a command without a collation by it.
	DefaultCollation bsoncore.Document
}

func appendTS(b *bsoncore.DocumentBuilder, key string, ts hlc.Timestamp) *bsoncore.DocumentBuilder {
	return b.AppendTimestamp(key, ts.T(), ts.I())
}

// Doc is the config.collections document.
func (c Collection) Doc() bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendString("_id", c.NS).AppendObjectID("lastmodEpoch", c.Epoch).
		AppendDateTime("lastmod", c.Updated.UnixMilli())
	appendTS(b, "timestamp", c.Timestamp)
	b.AppendBinary("uuid", bson.TypeBinaryUUID, c.UUID[:]).AppendDocument("key", c.Key).
		AppendBoolean("unique", c.Unique).AppendBoolean("noBalance", c.NoBalance)
	if c.DefaultCollation != nil {
		b.AppendDocument("defaultCollation", c.DefaultCollation)
	}
	if c.NoMigrations {
		b.AppendBoolean("permitMigrations", false)
	}
	return b.Build()
}

// ParseCollection reads a config.collections document.
func ParseCollection(d bsoncore.Document) (Collection, error) {
	var c Collection
	var ok bool
	bad := func(field string) (Collection, error) {
		return Collection{}, fmt.Errorf("shard: config.collections entry %s: bad or missing %s", d, field)
	}
	if c.NS, ok = d.Lookup("_id").StringValueOK(); !ok {
		return bad("_id")
	}
	if c.Epoch, ok = d.Lookup("lastmodEpoch").ObjectIDOK(); !ok {
		return bad("lastmodEpoch")
	}
	if ms, ok := d.Lookup("lastmod").DateTimeOK(); ok {
		c.Updated = time.UnixMilli(ms)
	}
	t, i, ok := d.Lookup("timestamp").TimestampOK()
	if !ok {
		return bad("timestamp")
	}
	c.Timestamp = hlc.New(t, i)
	sub, data, ok := d.Lookup("uuid").BinaryOK()
	if !ok || sub != bson.TypeBinaryUUID || len(data) != 16 {
		return bad("uuid")
	}
	copy(c.UUID[:], data)
	if c.Key, ok = d.Lookup("key").DocumentOK(); !ok {
		return bad("key")
	}
	c.Unique, _ = d.Lookup("unique").BooleanOK()
	c.NoBalance, _ = d.Lookup("noBalance").BooleanOK()
	if permit, ok := d.Lookup("permitMigrations").BooleanOK(); ok {
		c.NoMigrations = !permit
	}
	c.DefaultCollation, _ = d.Lookup("defaultCollation").DocumentOK()
	return c, nil
}

// ChunkDocs returns m's chunks as config.chunks documents of the
// collection with uuid: {_id, uuid, min, max, shard, lastmod,
// onCurrentShardSince, history: [{validAfter, shard}]}.
func (m *Map) ChunkDocs(uuid [16]byte) []bsoncore.Document {
	out := make([]bsoncore.Document, len(m.Chunks))
	for i, c := range m.Chunks {
		hist := bsoncore.NewDocumentBuilder()
		appendTS(hist, "validAfter", c.Since)
		histDoc := hist.AppendString("shard", c.Shard).Build()
		b := bsoncore.NewDocumentBuilder().AppendObjectID("_id", c.ID).AppendBinary("uuid", bson.TypeBinaryUUID, uuid[:]).
			AppendDocument("min", c.Min).AppendDocument("max", c.Max).AppendString("shard", c.Shard).
			AppendTimestamp("lastmod", c.Version.Major, c.Version.Minor)
		appendTS(b, "onCurrentShardSince", c.Since)
		out[i] = b.AppendArray("history", bsoncore.NewArrayBuilder().AppendDocument(histDoc).Build()).Build()
	}
	return out
}

// MapFromConfig rebuilds a routing table from a config.collections entry
// and its config.chunks documents (in any order), checking invariant
// "Chunks tile the key space": a router or shard never routes by a map
// with a gap or an overlap.
func MapFromConfig(coll Collection, chunks []bsoncore.Document) (*Map, error) {
	p, err := ParsePattern(coll.Key)
	if err != nil {
		return nil, err
	}
	m := &Map{NS: coll.NS, Pattern: p, Epoch: coll.Epoch}
	for _, d := range chunks {
		var c Chunk
		var ok bool
		if sub, data, ok := d.Lookup("uuid").BinaryOK(); !ok || sub != bson.TypeBinaryUUID || !bytes.Equal(data, coll.UUID[:]) {
			continue // another collection's chunk
		}
		if c.ID, ok = d.Lookup("_id").ObjectIDOK(); !ok {
			return nil, fmt.Errorf("shard: chunk without an ObjectId _id: %s", d)
		}
		c.Min, ok = d.Lookup("min").DocumentOK()
		if !ok {
			return nil, fmt.Errorf("shard: chunk %s has no min", c.ID.Hex())
		}
		if c.Max, ok = d.Lookup("max").DocumentOK(); !ok {
			return nil, fmt.Errorf("shard: chunk %s has no max", c.ID.Hex())
		}
		if c.Shard, ok = d.Lookup("shard").StringValueOK(); !ok {
			return nil, fmt.Errorf("shard: chunk %s has no shard", c.ID.Hex())
		}
		major, minor, ok := d.Lookup("lastmod").TimestampOK()
		if !ok {
			return nil, fmt.Errorf("shard: chunk %s has no lastmod", c.ID.Hex())
		}
		c.Version = Version{major, minor}
		if t, i, ok := d.Lookup("onCurrentShardSince").TimestampOK(); ok {
			c.Since = hlc.New(t, i)
		}
		if c.min, err = p.Encode(c.Min); err != nil {
			return nil, err
		}
		if c.max, err = p.Encode(c.Max); err != nil {
			return nil, err
		}
		m.Chunks = append(m.Chunks, c)
	}
	sort.Slice(m.Chunks, func(i, j int) bool { return bytes.Compare(m.Chunks[i].min, m.Chunks[j].min) < 0 })
	return m, m.Check()
}
