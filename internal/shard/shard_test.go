package shard

import (
	"errors"
	"fmt"
	"github.com/cairndb/cairn/internal/bsonx/bsonxtest"
	"math/rand/v2"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
)

var epoch = bson.NewObjectID()

func codeOf(err error) mongoerr.Code {
	var me *mongoerr.Error
	if errors.As(err, &me) {
		return me.Code
	}
	return 0
}

func TestParsePattern(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want mongoerr.Code
	}{
		{`{"a": 1}`, 0},
		{`{"project_id": 1, "doc_id": 1}`, 0},
		{`{"_id.env": "hashed"}`, 0},
		{`{"a": 1, "b": "hashed"}`, 0},
		{`{}`, mongoerr.BadValue},
		{`{"a": -1}`, mongoerr.BadValue},
		{`{"a": "text"}`, mongoerr.BadValue},
		{`{"a": "hashed", "b": "hashed"}`, mongoerr.BadValue},
		{`{"$a": 1}`, mongoerr.BadValue},
		{`{"a": 1, "a.b": 1}`, mongoerr.BadValue},
		{`{"a.": 1}`, mongoerr.BadValue},
	} {
		_, err := ParsePattern(ext(t, tc.key))
		if got := codeOf(err); got != tc.want || (tc.want == 0) != (err == nil) {
			t.Errorf("%s: err %v, want code %d", tc.key, err, tc.want)
		}
	}
}

func TestExtract(t *testing.T) {
	hash := func(v any) int64 {
		typ, data, _ := bson.MarshalValue(v)
		return index.Hash(bsoncore.Value{Type: bsoncore.Type(typ), Data: data})
	}
	for _, tc := range []struct {
		key, doc string
		want     string // extended JSON, or "" with code
		code     mongoerr.Code
	}{
		{`{"a": 1}`, `{"_id": 1, "a": 5}`, `{"a": 5}`, 0},
		{`{"a": 1, "b.c": 1}`, `{"a": "x", "b": {"c": 2.5}}`, `{"a": "x", "b.c": 2.5}`, 0},
		{`{"a": 1}`, `{"_id": 1}`, `{"a": null}`, 0},
		{`{"a.b": 1}`, `{"a": 3}`, `{"a.b": null}`, 0},
		{`{"_id.env": "hashed"}`, `{"_id": {"env": "prod", "name": "web"}}`, fmt.Sprintf(`{"_id.env": {"$numberLong": "%d"}}`, hash("prod")), 0},
		{`{"a": 1}`, `{"a": [1, 2]}`, "", mongoerr.ShardKeyNotFound},
		{`{"a.b": 1}`, `{"a": [{"b": 1}]}`, "", mongoerr.ShardKeyNotFound},
	} {
		p, err := ParsePattern(ext(t, tc.key))
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Extract(ext(t, tc.doc))
		if tc.code != 0 {
			if codeOf(err) != tc.code {
				t.Errorf("%s of %s: err %v, want code %d", tc.key, tc.doc, err, tc.code)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if want := ext(t, tc.want); !slices.Equal(got, want) {
			t.Errorf("%s of %s: %s, want %s", tc.key, tc.doc, got, want)
		}
	}
}

func TestHashedSplitPoints(t *testing.T) {
	const q = (1<<63 - 1) / 4 * 2 // MaxInt64/4*2
	for _, tc := range []struct {
		n    int
		want []int64
	}{
		{1, nil},
		{2, []int64{0}},
		{4, []int64{-q, 0, q}},
		{3, []int64{-(1<<63 - 1) / 3 * 2 / 2, (1<<63 - 1) / 3 * 2 / 2}},
	} {
		if got := HashedSplitPoints(tc.n); !slices.Equal(got, tc.want) {
			t.Errorf("n=%d: %v, want %v", tc.n, got, tc.want)
		}
	}
	p, _ := ParsePattern(ext(t, `{"k": "hashed"}`))
	m, err := NewHashedMap("db.c", p, epoch, []string{"s0", "s1", "s2"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	owned := map[string]int{}
	for _, c := range m.Chunks {
		owned[c.Shard]++
	}
	if len(m.Chunks) != 6 || owned["s0"] != 2 || owned["s1"] != 2 || owned["s2"] != 2 {
		t.Fatalf("6 chunks, two per shard expected: %v", owned)
	}
}

// randomMap splits a map over pattern p at the keys of random documents
// and deals the chunks to shards at random.
func randomMap(t testing.TB, rng *rand.Rand, p *Pattern, docs []bsoncore.Document, shards []string) *Map {
	m := NewMap("db.c", p, epoch, shards[0])
	for range 12 {
		key, err := p.Extract(docs[rng.IntN(len(docs))])
		if err != nil {
			t.Fatal(err)
		}
		_ = m.Split(key) // a key on an existing bound is refused: fine
	}
	for i := range m.Chunks {
		m.Chunks[i].Shard = shards[rng.IntN(len(shards))]
	}
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMapMutationsKeepTiling checks "Chunks tile the key space" and
// "Versions rise" over random splits, moves and merges, and that a split
// or merge never changes a document's owner.
func TestMapMutationsKeepTiling(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	p, _ := ParsePattern(ext(t, `{"a": 1, "b": 1}`))
	var docs []bsoncore.Document
	for i := range 300 {
		docs = append(docs, raw(t, bson.D{{Key: "a", Value: rng.IntN(20)}, {Key: "b", Value: fmt.Sprint(i)}}))
	}
	m := NewMap("db.c", p, epoch, "s0")
	shards := []string{"s0", "s1", "s2"}
	owners := func() []string {
		var out []string
		for _, d := range docs {
			s, err := m.ShardFor(d)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}
	for step := range 400 {
		before, v := owners(), m.Version()
		var err error
		kind := rng.IntN(3)
		switch kind {
		case 0:
			key, _ := p.Extract(docs[rng.IntN(len(docs))])
			err = m.Split(key)
		case 1:
			err = m.Move(rng.IntN(len(m.Chunks)), shards[rng.IntN(len(shards))])
		case 2:
			i := rng.IntN(len(m.Chunks))
			err = m.Merge(i, min(i+1+rng.IntN(2), len(m.Chunks)-1))
		}
		if cerr := m.Check(); cerr != nil {
			t.Fatalf("seed %d step %d: %v", seed, step, cerr)
		}
		if err != nil {
			if m.Version() != v {
				t.Fatalf("seed %d step %d: a refused change moved the version", seed, step)
			}
			continue
		}
		if !v.Less(m.Version()) {
			t.Fatalf("seed %d step %d: version %v did not rise past %v", seed, step, m.Version(), v)
		}
		if kind != 1 && !slices.Equal(before, owners()) {
			t.Fatalf("seed %d step %d: a split or merge changed an owner", seed, step)
		}
	}
}

// TestTargetSound checks "Targeting is sound" over shard key patterns and
// filters of every kind the bounds understand (and some they do not).
func TestTargetSound(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	var docs []bsoncore.Document
	for i := range 400 {
		docs = append(docs, raw(t, bson.D{{Key: "_id", Value: bson.D{{Key: "env", Value: fmt.Sprintf("e%d", i%7)}, {Key: "name", Value: fmt.Sprint(i)}}},
			{Key: "a", Value: rng.IntN(30)}, {Key: "b", Value: fmt.Sprintf("k%03d", rng.IntN(100))}}))
	}
	patterns := []string{`{"a": 1}`, `{"a": 1, "b": 1}`, `{"a": "hashed"}`, `{"_id.env": "hashed"}`, `{"a": 1, "b": "hashed"}`, `{"b": 1, "a": 1}`}
	filters := []func() string{
		func() string { return fmt.Sprintf(`{"a": %d}`, rng.IntN(30)) },
		func() string { return fmt.Sprintf(`{"a": %d, "b": "k%03d"}`, rng.IntN(30), rng.IntN(100)) },
		func() string {
			return fmt.Sprintf(`{"a": {"$in": [%d, %d, %d]}}`, rng.IntN(30), rng.IntN(30), rng.IntN(30))
		},
		func() string { return fmt.Sprintf(`{"a": {"$gte": %d, "$lt": %d}}`, rng.IntN(15), 15+rng.IntN(15)) },
		func() string {
			return fmt.Sprintf(`{"b": {"$gt": "k%03d"}, "a": {"$lte": %d}}`, rng.IntN(100), rng.IntN(30))
		},
		func() string { return fmt.Sprintf(`{"_id.env": "e%d"}`, rng.IntN(7)) },
		func() string { return fmt.Sprintf(`{"$or": [{"a": %d}, {"b": "k%03d"}]}`, rng.IntN(30), rng.IntN(100)) },
		func() string { return `{"a": {"$exists": true}}` },
		func() string { return fmt.Sprintf(`{"a": {"$ne": %d}}`, rng.IntN(30)) },
	}
	shards := []string{"s0", "s1", "s2", "s3"}
	checked, narrowed := 0, 0
	for _, ps := range patterns {
		p, err := ParsePattern(ext(t, ps))
		if err != nil {
			t.Fatal(err)
		}
		m := randomMap(t, rng, p, docs, shards)
		for range 60 {
			fs := filters[rng.IntN(len(filters))]()
			f, err := query.Parse(ext(t, fs))
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := m.Target(ext(t, fs))
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range docs {
				if !f.Match(d) {
					continue
				}
				owner, err := m.ShardFor(d)
				if err != nil {
					t.Fatal(err)
				}
				checked++
				if !slices.Contains(got, owner) {
					t.Fatalf("seed %d: pattern %s filter %s: document on %s, targeted only %v", seed, ps, fs, owner, got)
				}
			}
			if len(got) < len(shards) {
				narrowed++
			}
		}
	}
	if narrowed == 0 {
		t.Fatal("no filter was ever targeted to fewer than every shard")
	}
	t.Logf("%d matching documents found on targeted shards; %d filters narrowed", checked, narrowed)
}

// TestTargetExact: equality on the whole key names one shard; a filter
// leaving the first field open reaches every owning shard.
func TestTargetExact(t *testing.T) {
	p, _ := ParsePattern(ext(t, `{"project_id": 1, "doc_id": 1}`))
	m := NewMap("db.docs", p, epoch, "s0")
	for _, at := range []string{`{"project_id": 10, "doc_id": {"$minKey": 1}}`, `{"project_id": 20, "doc_id": 5}`} {
		if err := m.Split(ext(t, at)); err != nil {
			t.Fatal(err)
		}
	}
	_ = m.Move(1, "s1")
	_ = m.Move(2, "s2")
	for _, tc := range []struct {
		filter string
		want   []string
		exact  bool
	}{
		{`{"project_id": 15, "doc_id": 3}`, []string{"s1"}, true},
		{`{"project_id": 20, "doc_id": 4}`, []string{"s1"}, true},
		{`{"project_id": 20, "doc_id": 5}`, []string{"s2"}, true},
		{`{"project_id": 20}`, []string{"s1", "s2"}, false},
		{`{"project_id": 5}`, []string{"s0"}, false},
		{`{"doc_id": 5}`, []string{"s0", "s1", "s2"}, false},
		{`{"project_id": {"$in": []}}`, nil, false},
	} {
		got, exact, err := m.Target(ext(t, tc.filter))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) || exact != tc.exact {
			t.Errorf("%s: %v exact %v, want %v exact %v", tc.filter, got, exact, tc.want, tc.exact)
		}
	}
}

func TestPlan(t *testing.T) {
	p, _ := ParsePattern(ext(t, `{"a": 1}`))
	build := func(owners ...string) *Map {
		m := NewMap("db.c", p, epoch, owners[0])
		for i := 1; i < len(owners); i++ {
			_ = m.Split(raw(t, bson.D{{Key: "a", Value: i * 10}}))
		}
		for i, o := range owners {
			m.Chunks[i].Shard = o
		}
		return m
	}
	const mb = 1 << 20
	for _, tc := range []struct {
		name   string
		owners []string
		sizes  []int64
		loads  []Load
		want   []Migration
	}{
		{"balanced within three range sizes", []string{"s0", "s1"}, []int64{300 * mb, 100 * mb},
			[]Load{{"s0", 300 * mb, false}, {"s1", 100 * mb, false}}, nil},
		{"imbalance moves the largest chunk that does not overshoot", []string{"s0", "s0", "s0", "s1"}, []int64{300 * mb, 200 * mb, 50 * mb, 0},
			[]Load{{"s0", 550 * mb, false}, {"s1", 0, false}}, []Migration{{1, "s0", "s1"}}},
		{"a draining shard empties first, one migration per shard", []string{"s2", "s2", "s0"}, []int64{10 * mb, 10 * mb, 10 * mb},
			[]Load{{"s0", 10 * mb, false}, {"s1", 0, false}, {"s2", 20 * mb, true}}, []Migration{{0, "s2", "s1"}}},
	} {
		got := Plan(build(tc.owners...), tc.sizes, tc.loads, 128*mb)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestAllowsUniqueIndex(t *testing.T) {
	p, _ := ParsePattern(ext(t, `{"project_id": 1, "doc_id": 1}`))
	for _, tc := range []struct {
		key string
		ok  bool
	}{
		{`{"project_id": 1, "doc_id": 1}`, true},
		{`{"project_id": 1, "doc_id": 1, "key": 1}`, true},
		{`{"_id": 1}`, true},
		{`{"project_id": 1}`, false},
		{`{"doc_id": 1, "project_id": 1}`, false},
		{`{"key": 1}`, false},
	} {
		err := p.AllowsUniqueIndex(ext(t, tc.key))
		if (err == nil) != tc.ok || err != nil && codeOf(err) != mongoerr.CannotCreateIndex {
			t.Errorf("%s: %v, want allowed=%v", tc.key, err, tc.ok)
		}
	}
}

// TestConfigRoundTrip: a map written as config.collections and
// config.chunks documents reads back the same, whatever the chunk order;
// a gap among the chunks is refused.
func TestConfigRoundTrip(t *testing.T) {
	p, _ := ParsePattern(ext(t, `{"project_id": 1, "doc_id": 1}`))
	m := NewMap("db.docs", p, epoch, "s0")
	_ = m.Split(ext(t, `{"project_id": 10, "doc_id": {"$minKey": 1}}`))
	_ = m.Split(ext(t, `{"project_id": 20, "doc_id": 5}`))
	_ = m.Move(2, "s1")
	coll := Collection{NS: "db.docs", Epoch: epoch, Timestamp: 7 << 32, UUID: [16]byte{1, 2, 3}, Key: p.Doc, Unique: true}
	cd, err := ParseCollection(coll.Doc())
	if err != nil {
		t.Fatal(err)
	}
	docs := m.ChunkDocs(coll.UUID)
	other := Collection{UUID: [16]byte{9}}
	docs = append(docs, NewMap("db.other", p, epoch, "s9").ChunkDocs(other.UUID)...) // ignored: another collection
	slices.Reverse(docs)
	back, err := MapFromConfig(cd, docs)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Chunks) != len(m.Chunks) || back.Version() != m.Version() || back.Epoch != epoch || !cd.Unique {
		t.Fatalf("read back %d chunks at %v, want %d at %v", len(back.Chunks), back.Version(), len(m.Chunks), m.Version())
	}
	for i := range m.Chunks {
		a, b := m.Chunks[i], back.Chunks[i]
		if a.ID != b.ID || a.Shard != b.Shard || a.Version != b.Version || !slices.Equal(a.Min, b.Min) || !slices.Equal(a.Max, b.Max) {
			t.Fatalf("chunk %d: %+v, want %+v", i, b, a)
		}
	}
	gap := slices.Delete(m.ChunkDocs(coll.UUID), 1, 2)
	if _, err := MapFromConfig(cd, gap); err == nil {
		t.Fatal("a map with a gap was accepted")
	}
}

func ext(t testing.TB, s string) bsoncore.Document { t.Helper(); return bsonxtest.ExtDoc(t, s) }

func raw(t testing.TB, v any) bsoncore.Document { t.Helper(); return bsonxtest.Marshal(t, v) }
