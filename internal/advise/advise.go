package advise

import (
	"fmt"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Severity orders findings: what to fix first.
type Severity int

const (
	Info Severity = iota
	Low
	Medium
	High
)

func (s Severity) String() string {
	return [...]string{"info", "low", "medium", "high"}[s]
}

// Finding is one piece of advice.
type Finding struct {
	Kind     string // dynamicFieldNames, duplicatedIdentity, ...
	Severity Severity
	// Path is the field path or index name the finding is about.
	Path string
	// Summary says what was seen, with its counts.
	Summary string
	// Evidence holds the counts and examples behind Summary.
	Evidence []Fact
	// Suggestion says what to change.
	Suggestion string
}

// Fact is one named piece of evidence: a number, a string or a list of
// strings.
type Fact struct {
	Name  string
	Value any // int, int64, float64, string, []string
}

// Index is one index of the collection as the advisor sees it.
type Index struct {
	Name    string
	Key     bsoncore.Document
	Unique  bool
	Sparse  bool
	Partial bool
	// Ops is how many queries used it since Since (the server's start or
	// the index's creation), as $indexStats reports; UsageKnown is false
	// when the caller has no usage figures.
	Ops        int64
	UsageKnown bool
}

// Shape is one query shape the server recorded: the fields a filter tests
// (by kind) and sorts on, how often it ran and what it cost.
type Shape struct {
	Command  string   // find, count, distinct, aggregate, update, delete
	Equality []string // fields tested for equality or $in
	Range    []string // fields tested with ranges ($gt, $lt, ...)
	Sort     []string // sort fields in order
	Runs     int64
	Examined int64  // documents plus keys examined, over all runs
	Returned int64  // documents returned or matched, over all runs
	Plan     string // the plan summary of the last run: COLLSCAN, IXSCAN { a: 1 }
	// ArrayPositions lists update paths that named an array element by
	// position or by $ / $[] inside another array (nested mutable arrays).
	ArrayPositions []string
}

// Input is everything Analyze reads about one collection.
type Input struct {
	NS      string
	Sample  []bsoncore.Document // a bounded random sample of its documents
	Indexes []Index
	Shapes  []Shape
}

// Options tune the detectors' thresholds; the zero value is the default.
type Options struct {
	// ArrayLimit is the array length from which an array counts as
	// unbounded (default 1000).
	ArrayLimit int
	// MinRatio is the examined/returned ratio from which a query shape
	// counts as unindexed (default 10).
	MinRatio float64
}

func (o Options) withDefaults() Options {
	if o.ArrayLimit <= 0 {
		o.ArrayLimit = 1000
	}
	if o.MinRatio <= 0 {
		o.MinRatio = 10
	}
	return o
}

// detector is one kind of advice.
type detector func(in *Input, p *profile, o Options) []Finding

// detectors runs in this order; findings are then sorted by severity.
var detectors = []detector{
	dynamicFieldNames,
	duplicatedIdentity,
	versionPerDocument,
	arrays,
	unindexedShapes,
	indexUse,
	shardKeys,
}

// Analyze returns the findings for in, most severe first.
func Analyze(in Input, o Options) []Finding {
	o = o.withDefaults()
	p := buildProfile(in.Sample)
	var out []Finding
	for _, d := range detectors {
		out = append(out, d(&in, p, o)...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Severity > out[j].Severity })
	return out
}

func pct(n, of int) string {
	if of == 0 {
		return "0%"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(n)/float64(of))
}

func joinPath(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// sortedKeys returns m's keys ordered by count, most frequent first.
func sortedKeys(m map[string]int, limit int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	if len(keys) > limit {
		keys = keys[:limit]
	}
	return keys
}

func quoteAll(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}
