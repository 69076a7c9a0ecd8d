package shard

import (
	"bytes"
	"fmt"
	"math"
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// Version is a chunk version as MongoDB's config.chunks records it
// (lastmod): a major number that moves bump and a minor number that
// splits and merges bump. The collection's epoch says which incarnation
// of the collection the versions belong to.
type Version struct{ Major, Minor uint32 }

// Less orders versions.
func (v Version) Less(w Version) bool {
	return v.Major < w.Major || v.Major == w.Major && v.Minor < w.Minor
}

func (v Version) String() string { return fmt.Sprintf("%d|%d", v.Major, v.Minor) }

// Chunk is one range [Min, Max) of shard keys and the shard that owns it.
type Chunk struct {
	Min, Max bsoncore.Document // shard key documents
	Shard    string
	Version  Version
	// ID is the chunk's config.chunks _id; Since is when it came to its
	// shard (onCurrentShardSince), zero until the config servers stamp it.
	ID       bson.ObjectID
	Since    hlc.Timestamp
	min, max []byte // their encodings
}

// Map is a sharded collection's routing table: its chunks in key order
// (invariant "Chunks tile the key space").
type Map struct {
	NS      string
	Pattern *Pattern
	Epoch   bson.ObjectID // lastmodEpoch: a new one for every incarnation of the collection
	Chunks  []Chunk
}

// NewMap returns the map of a newly sharded collection: one chunk over the
// whole key space, on shard.
func NewMap(ns string, p *Pattern, epoch bson.ObjectID, shard string) *Map {
	lo, hi := p.MinKey(), p.MaxKey()
	return &Map{NS: ns, Pattern: p, Epoch: epoch, Chunks: []Chunk{{
		Min: lo, Max: hi, Shard: shard, Version: Version{1, 0}, ID: bson.NewObjectID(),
		min: mustEncode(p, lo), max: mustEncode(p, hi),
	}}}
}

// HashedSplitPoints returns the hash values at which MongoDB 7.0 splits an
// empty collection with a hashed shard key into n initial chunks: evenly
// over the int64 hash space, symmetric around 0 (0 itself a split point
// when n is even).
func HashedSplitPoints(n int) []int64 {
	if n < 2 {
		return nil
	}
	interval := (math.MaxInt64 / int64(n)) * 2
	var out []int64
	cur := int64(0)
	if n%2 == 0 {
		out = append(out, 0)
		cur += interval
	} else {
		cur += interval / 2
	}
	for range (n - 1) / 2 {
		out = append(out, cur, -cur)
		cur += interval
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// NewHashedMap returns the initial map of an empty collection sharded on a
// pattern whose first field is hashed: perShard chunks for each shard
// (MongoDB 7.0 makes two per shard by default), dealt to the shards in
// turn. Later fields of a compound pattern start at MinKey in each bound.
func NewHashedMap(ns string, p *Pattern, epoch bson.ObjectID, shards []string, perShard int) (*Map, error) {
	if len(p.Fields) == 0 || !p.Fields[0].Hashed {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "presplitting needs a shard key whose first field is hashed, not %s", p)
	}
	if len(shards) == 0 || perShard < 1 {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "presplitting needs at least one shard and one chunk per shard")
	}
	m := NewMap(ns, p, epoch, shards[0])
	for _, h := range HashedSplitPoints(perShard * len(shards)) {
		b := bsoncore.NewDocumentBuilder().AppendInt64(p.Fields[0].Path, h)
		for _, f := range p.Fields[1:] {
			b.AppendValue(f.Path, bsoncore.Value{Type: bsoncore.TypeMinKey})
		}
		if err := m.Split(b.Build()); err != nil {
			return nil, err
		}
	}
	for i := range m.Chunks {
		m.Chunks[i].Shard = shards[i*len(shards)/len(m.Chunks)]
	}
	return m, m.Check()
}

// Check verifies invariant "Chunks tile the key space".
func (m *Map) Check() error {
	if len(m.Chunks) == 0 {
		return fmt.Errorf("shard: %s has no chunks", m.NS)
	}
	if !bytes.Equal(m.Chunks[0].min, mustEncode(m.Pattern, m.Pattern.MinKey())) {
		return fmt.Errorf("shard: %s's first chunk starts at %s, not MinKey", m.NS, m.Chunks[0].Min)
	}
	last := m.Chunks[len(m.Chunks)-1]
	if !bytes.Equal(last.max, mustEncode(m.Pattern, m.Pattern.MaxKey())) {
		return fmt.Errorf("shard: %s's last chunk ends at %s, not MaxKey", m.NS, last.Max)
	}
	for i, c := range m.Chunks {
		if bytes.Compare(c.min, c.max) >= 0 {
			return fmt.Errorf("shard: %s chunk %d is empty or reversed: [%s, %s)", m.NS, i, c.Min, c.Max)
		}
		if i > 0 && !bytes.Equal(m.Chunks[i-1].max, c.min) {
			return fmt.Errorf("shard: %s chunks %d and %d leave a gap or overlap: %s then %s", m.NS, i-1, i, m.Chunks[i-1].Max, c.Min)
		}
	}
	return nil
}

// Version is the collection version: the greatest chunk version.
func (m *Map) Version() Version {
	var v Version
	for _, c := range m.Chunks {
		if v.Less(c.Version) {
			v = c.Version
		}
	}
	return v
}

// ShardVersion is the greatest version of shard's chunks (zero when it
// owns none).
func (m *Map) ShardVersion(shard string) Version {
	var v Version
	for _, c := range m.Chunks {
		if c.Shard == shard && v.Less(c.Version) {
			v = c.Version
		}
	}
	return v
}

// find returns the index of the chunk holding the encoded key.
func (m *Map) find(key []byte) int {
	i := sort.Search(len(m.Chunks), func(i int) bool { return bytes.Compare(m.Chunks[i].max, key) > 0 })
	if i == len(m.Chunks) {
		i-- // only the all-MaxKey key itself, which no document holds
	}
	return i
}

// ChunkFor returns the chunk holding shard key key.
func (m *Map) ChunkFor(key bsoncore.Document) (*Chunk, error) {
	enc, err := m.Pattern.Encode(key)
	if err != nil {
		return nil, err
	}
	return &m.Chunks[m.find(enc)], nil
}

// ShardFor returns the shard that owns doc.
func (m *Map) ShardFor(doc bsoncore.Document) (string, error) {
	key, err := m.Pattern.Extract(doc)
	if err != nil {
		return "", err
	}
	c, err := m.ChunkFor(key)
	if err != nil {
		return "", err
	}
	return c.Shard, nil
}

// Split divides the chunk holding at into [min, at) and [at, max); at must
// lie strictly inside it. Both halves take new minor versions.
func (m *Map) Split(at bsoncore.Document) error {
	enc, err := m.Pattern.Encode(at)
	if err != nil {
		return err
	}
	i := m.find(enc)
	c := m.Chunks[i]
	if bytes.Equal(enc, c.min) || bytes.Compare(enc, c.max) >= 0 {
		return mongoerr.New(mongoerr.InvalidOptions, "cannot split chunk [%s, %s) at %s: a split point must lie inside the chunk, not on its bounds", c.Min, c.Max, at)
	}
	v := m.Version()
	left, right := c, c
	right.ID = bson.NewObjectID()
	left.Max, left.max, left.Version = at, enc, Version{v.Major, v.Minor + 1}
	right.Min, right.min, right.Version = at, enc, Version{v.Major, v.Minor + 2}
	m.Chunks = append(m.Chunks[:i], append([]Chunk{left, right}, m.Chunks[i+1:]...)...)
	return nil
}

// Move gives chunk i to shard to. The moved chunk takes the next major
// version, and so does one chunk the donor keeps (as MongoDB bumps the
// donor's shard version), so both shards see the change.
func (m *Map) Move(i int, to string) error {
	if i < 0 || i >= len(m.Chunks) {
		return mongoerr.New(mongoerr.InvalidOptions, "no chunk %d in %s", i, m.NS)
	}
	from := m.Chunks[i].Shard
	if from == to {
		return mongoerr.New(mongoerr.InvalidOptions, "chunk [%s, %s) is already on shard %s", m.Chunks[i].Min, m.Chunks[i].Max, to)
	}
	v := m.Version()
	m.Chunks[i].Shard, m.Chunks[i].Version = to, Version{v.Major + 1, 0}
	for j := range m.Chunks {
		if m.Chunks[j].Shard == from {
			m.Chunks[j].Version = Version{v.Major + 1, 1}
			break
		}
	}
	return nil
}

// Merge joins chunks lo..hi (inclusive), which must be adjacent and on one
// shard, into one.
func (m *Map) Merge(lo, hi int) error {
	if lo < 0 || hi >= len(m.Chunks) || lo >= hi {
		return mongoerr.New(mongoerr.InvalidOptions, "cannot merge chunks %d..%d of %s", lo, hi, m.NS)
	}
	for j := lo + 1; j <= hi; j++ {
		if m.Chunks[j].Shard != m.Chunks[lo].Shard {
			return mongoerr.New(mongoerr.IllegalOperation, "cannot merge chunks on different shards (%s and %s)", m.Chunks[lo].Shard, m.Chunks[j].Shard)
		}
	}
	v := m.Version()
	merged := m.Chunks[lo]
	merged.Max, merged.max, merged.Version = m.Chunks[hi].Max, m.Chunks[hi].max, Version{v.Major, v.Minor + 1}
	m.Chunks = append(m.Chunks[:lo], append([]Chunk{merged}, m.Chunks[hi+1:]...)...)
	return nil
}
