package advise

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// minShardSample is the fewest sampled documents shard-key advice is
// given on: below it cardinality and frequency say nothing.
const minShardSample = 100

// candidate is one possible shard key and what the sample says of it.
type candidate struct {
	fields    []string
	distinct  int
	capped    bool
	topShare  float64 // share of the sample holding the most common value
	monotonic bool
	targeted  float64 // share of recorded query runs with equality on every field
	blockers  []string
	verdict   string
	score     int
}

// shardKeys rates possible shard keys: cardinality, frequency of the most
// common value, monotonicity, the recorded query shapes each would
// target, and the unique indexes that would block it (a sharded
// collection enforces only unique indexes prefixed by its shard key).
func shardKeys(in *Input, p *profile, _ Options) []Finding {
	if p.docs < minShardSample {
		return nil
	}
	var cands []*candidate
	eligible := map[string]bool{}
	for _, path := range p.order {
		s := p.paths[path]
		if s.values == nil || s.docs*20 < p.docs*19 || s.kinds[bsoncore.TypeEmbeddedDocument]+s.kinds[bsoncore.TypeArray] > 0 {
			continue
		}
		eligible[path] = true
		c := &candidate{fields: []string{path}, distinct: len(s.values), capped: s.valuesCapped, monotonic: monotonic(s)}
		top := 0
		for _, n := range s.values {
			top = max(top, n)
		}
		c.topShare = float64(top) / float64(p.docs)
		cands = append(cands, c)
	}
	seen := map[string]bool{}
	for _, sh := range in.Shapes {
		fs := dedupeKeepOrder(sh.Equality)
		if len(fs) < 2 || seen[strings.Join(fs, ",")] || !all(fs, eligible) {
			continue
		}
		seen[strings.Join(fs, ",")] = true
		cands = append(cands, compound(in.Sample, p, fs))
	}
	var runs int64
	for _, sh := range in.Shapes {
		runs += sh.Runs
	}
	for _, c := range cands {
		rate(c, in, p.docs, runs)
	}
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.score != b.score {
			return a.score > b.score
		}
		if a.targeted != b.targeted {
			return a.targeted > b.targeted
		}
		if len(a.fields) != len(b.fields) {
			// Equal targeting: the key that also groups a query's
			// leading values (a tenant's documents) on few chunks.
			return len(a.fields) > len(b.fields)
		}
		return a.distinct > b.distinct
	})
	var out []Finding
	for i, c := range cands {
		if i == 5 {
			break
		}
		out = append(out, c.finding(in.NS, p.docs))
		if i == 0 && c.score >= 2 && len(c.blockers) > 0 {
			out = append(out, Finding{
				Kind: "uniqueBlocksSharding", Severity: Medium, Path: strings.Join(c.blockers, ", "),
				Summary: fmt.Sprintf("unique index %s does not start with the best shard key candidate %s; a sharded collection enforces only unique indexes prefixed by its shard key",
					strings.Join(c.blockers, ", "), c.key()),
				Evidence:   []Fact{{"shardKey", c.key()}, {"blockingIndexes", c.blockers}},
				Suggestion: fmt.Sprintf("Put the shard key's fields first in each unique index (unique within a %s value), or enforce that uniqueness another way (a compound _id holds it for free).", strings.Join(c.fields, ", ")),
			})
		}
	}
	return out
}

func all(fs []string, ok map[string]bool) bool {
	for _, f := range fs {
		if !ok[f] {
			return false
		}
	}
	return true
}

func dedupeKeepOrder(s []string) []string {
	var out []string
	for _, v := range s {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// compound measures a multi-field candidate by walking the sample.
func compound(sample []bsoncore.Document, p *profile, fs []string) *candidate {
	counts := map[string]int{}
	for _, d := range sample {
		var k strings.Builder
		for _, f := range fs {
			v := d.Lookup(strings.Split(f, ".")...)
			k.WriteByte(byte(v.Type))
			k.Write(v.Data)
		}
		if len(counts) < maxValuesPerField {
			counts[k.String()]++
		}
	}
	top := 0
	for _, n := range counts {
		top = max(top, n)
	}
	return &candidate{fields: fs, distinct: len(counts), capped: len(counts) >= maxValuesPerField,
		topShare: float64(top) / float64(len(sample)), monotonic: monotonic(p.paths[fs[0]])}
}

// monotonic reports whether a field's values likely rise with insertion:
// ObjectIds and dates, or integers packed densely (a counter).
func monotonic(s *pathStat) bool {
	if s.kinds[bsoncore.TypeObjectID]+s.kinds[bsoncore.TypeDateTime]+s.kinds[bsoncore.TypeTimestamp] > 0 {
		return true
	}
	var lo, hi int64
	n := 0
	for k := range s.values {
		v := bsoncore.Value{Type: bsoncore.Type(k[0]), Data: []byte(k[1:])}
		i, ok := v.AsInt64OK()
		if !ok || v.Type == bsoncore.TypeDouble {
			return false
		}
		if n == 0 || i < lo {
			lo = i
		}
		if n == 0 || i > hi {
			hi = i
		}
		n++
	}
	return n >= minShardSample/2 && hi-lo < int64(4*n)
}

func rate(c *candidate, in *Input, docs int, runs int64) {
	var hit int64
	for _, sh := range in.Shapes {
		if all(c.fields, setOf(sh.Equality)) {
			hit += sh.Runs
		}
	}
	if runs > 0 {
		c.targeted = float64(hit) / float64(runs)
	}
	for _, ix := range in.Indexes {
		if !ix.Unique || ix.Name == "_id_" {
			continue
		}
		kf := keyFields(ix.Key)
		prefixed := len(kf) >= len(c.fields)
		for i := 0; prefixed && i < len(c.fields); i++ {
			prefixed = kf[i].name == c.fields[i]
		}
		if !prefixed {
			c.blockers = append(c.blockers, ix.Name)
		}
	}
	switch {
	case c.distinct < min(100, docs/2):
		c.verdict, c.score = "poor: low cardinality", 1
	case c.topShare > 0.2:
		c.verdict, c.score = fmt.Sprintf("poor: one value holds %.0f%% of documents", 100*c.topShare), 1
	case c.distinct*2 >= docs || c.capped:
		c.verdict, c.score = "good", 3
	default:
		c.verdict, c.score = "fair", 2
	}
	if c.monotonic && c.score >= 2 {
		c.verdict += ", but monotonic: shard it hashed"
	}
}

func setOf(s []string) map[string]bool {
	m := make(map[string]bool, len(s))
	for _, v := range s {
		m[v] = true
	}
	return m
}

func (c *candidate) key() string {
	parts := make([]string, len(c.fields))
	for i, f := range c.fields {
		parts[i] = fmt.Sprintf("%q: 1", f)
		if c.monotonic && len(c.fields) == 1 {
			parts[i] = fmt.Sprintf("%q: \"hashed\"", f)
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func (c *candidate) finding(ns string, docs int) Finding {
	distinct := fmt.Sprint(c.distinct)
	if c.capped {
		distinct = "≥" + distinct
	}
	var sugg string
	switch {
	case c.score == 1:
		sugg = fmt.Sprintf("Do not shard %s on %s alone: chunks cannot split below one value, so the busiest value's data and writes stay on one shard. Add a field with many values after it.", ns, c.key())
	case len(c.blockers) > 0:
		sugg = fmt.Sprintf("A good key once the unique indexes %s start with its fields.", strings.Join(c.blockers, ", "))
	default:
		sugg = fmt.Sprintf("sh.shardCollection(%q, %s)", ns, c.key())
	}
	return Finding{
		Kind: "shardKeyCandidate", Severity: Info, Path: c.key(),
		Summary: fmt.Sprintf("shard key %s: %s — %s distinct values in %d sampled documents, the most common in %.0f%%, targets %.0f%% of recorded query runs",
			c.key(), c.verdict, distinct, docs, 100*c.topShare, 100*c.targeted),
		Evidence: []Fact{{"distinct", c.distinct}, {"topValueShare", c.topShare}, {"monotonic", fmt.Sprint(c.monotonic)},
			{"targetedShare", c.targeted}, {"blockingUniqueIndexes", c.blockers}},
		Suggestion: sugg,
	}
}
