package commands

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/collation"
	"github.com/cairndb/cairn/internal/query"
)

// TestPlannerMatchesCollectionScanCollated is the planner's differential
// test over collated indexes: random strings (case, accents, digits,
// punctuation), numbers, arrays and subdocuments under indexes of several
// collations, queried under random collations; every find returns the
// same documents, in the same sort order, as a forced collection scan
// under the same collation. It checks MongoDB's rule: an index bounds
// strings only under its own collation.
func TestPlannerMatchesCollectionScanCollated(t *testing.T) {
	t.Parallel() // its own engine; the invariants pass runs these five side by side
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 24))
	t.Logf("seed %d", seed)
	_, run := commandRunner(t, "diffc")
	collations := []any{
		nil,
		bson.D{{Key: "locale", Value: "simple"}},
		bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}},
		bson.D{{Key: "locale", Value: "fr"}, {Key: "strength", Value: 1}},
		bson.D{{Key: "locale", Value: "en"}, {Key: "numericOrdering", Value: true}},
		bson.D{{Key: "locale", Value: "en"}, {Key: "caseFirst", Value: "upper"}},
		bson.D{{Key: "locale", Value: "en"}, {Key: "alternate", Value: "shifted"}},
	}
	indexes := bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "k", Value: 1}}}, {Key: "name", Value: "k_en2"}, {Key: "collation", Value: collations[2]}},
		bson.D{{Key: "key", Value: bson.D{{Key: "k", Value: -1}, {Key: "n", Value: 1}}}, {Key: "name", Value: "k_n_fr1"}, {Key: "collation", Value: collations[3]}},
		bson.D{{Key: "key", Value: bson.D{{Key: "n", Value: 1}, {Key: "k", Value: 1}}}, {Key: "name", Value: "n_k_simple"}},
		bson.D{{Key: "key", Value: bson.D{{Key: "j", Value: 1}}}, {Key: "name", Value: "j_num"}, {Key: "collation", Value: collations[4]}},
		bson.D{{Key: "key", Value: bson.D{{Key: "j", Value: 1}, {Key: "n", Value: -1}}}, {Key: "name", Value: "j_n_shifted"}, {Key: "collation", Value: collations[6]}},
	}
	if r := run(bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: indexes}}); r.Lookup("ok").Double() != 1 {
		t.Fatalf("createIndexes: %s", r)
	}
	words := []string{"a", "A", "á", "Á", "ab", "a-b", "a b", "b", "B", "é", "e", "E", "10", "9", "x10", "x9", "", "Zz", "ö", "o"}
	value := func() any {
		switch rng.IntN(8) {
		case 0:
			return rng.IntN(4)
		case 1:
			return bson.A{words[rng.IntN(len(words))], words[rng.IntN(len(words))]}
		case 2:
			return bson.D{{Key: "w", Value: words[rng.IntN(len(words))]}}
		case 3:
			return nil
		}
		return words[rng.IntN(len(words))]
	}
	docs := bson.A{}
	for i := range 200 {
		d := bson.D{{Key: "_id", Value: i}, {Key: "n", Value: rng.IntN(3)}}
		if v := value(); rng.IntN(8) > 0 {
			d = append(d, bson.E{Key: "k", Value: v})
		}
		if v := value(); rng.IntN(8) > 0 {
			if _, isArr := v.(bson.A); !isArr { // k and j in one compound? no: j's indexes hold no array
				d = append(d, bson.E{Key: "j", Value: v})
			}
		}
		docs = append(docs, d)
	}
	if r := run(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}}); r.Lookup("n").Int32() != 200 {
		t.Fatalf("insert: %s", r)
	}
	pred := func() any {
		w := words[rng.IntN(len(words))]
		switch rng.IntN(9) {
		case 6:
			if rng.IntN(4) > 0 {
				return w
			}
			// An $in of more than maxRanges (4,096) values: past the
			// words, strings no document holds; on a collated index its
			// first field must still be read as ranges (FETCH counts on
			// them).
			in := bson.A{w, words[rng.IntN(len(words))], rng.IntN(3)}
			for k := range 4100 {
				in = append(in, fmt.Sprintf("w%04d", k))
			}
			return bson.D{{Key: "$in", Value: in}}
		case 0:
			return bson.D{{Key: "$gt", Value: w}}
		case 1:
			return bson.D{{Key: "$lte", Value: w}}
		case 2:
			return bson.D{{Key: "$gte", Value: w}, {Key: "$lt", Value: words[rng.IntN(len(words))]}}
		case 3:
			return bson.D{{Key: "$in", Value: bson.A{w, words[rng.IntN(len(words))], rng.IntN(3)}}}
		case 4:
			return bson.D{{Key: "$ne", Value: w}}
		case 5:
			return rng.IntN(4)
		}
		return w
	}
	used := 0
	for i := range 600 {
		filter := bson.D{}
		for _, f := range []string{"k", "j", "n"} {
			if rng.IntN(2) == 0 {
				if f == "n" {
					filter = append(filter, bson.E{Key: f, Value: rng.IntN(3)})
				} else {
					filter = append(filter, bson.E{Key: f, Value: pred()})
				}
			}
		}
		if rng.IntN(4) == 0 { // an $or of two branches, one plan per branch
			filter = bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "k", Value: pred()}}, bson.D{{Key: "j", Value: pred()}}}}}
		}
		cmd := bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: filter}}
		var sortSpec bson.D
		if rng.IntN(2) == 0 {
			f := []string{"k", "j"}[rng.IntN(2)]
			sortSpec = bson.D{{Key: f, Value: []int{1, -1}[rng.IntN(2)]}, {Key: "_id", Value: 1}}
			if rng.IntN(2) == 0 {
				sortSpec = sortSpec[:1]
			}
			cmd = append(cmd, bson.E{Key: "sort", Value: sortSpec})
		}
		if c := collations[rng.IntN(len(collations))]; c != nil {
			cmd = append(cmd, bson.E{Key: "collation", Value: c})
		}
		find := func(hint any) ([]bsoncore.Document, int32) {
			c := slices.Clone(cmd)
			if hint != nil {
				c = append(c, bson.E{Key: "hint", Value: hint})
			}
			return firstBatchOf(run(append(c, bson.E{Key: "batchSize", Value: 1000})))
		}
		ex := run(bson.D{{Key: "explain", Value: cmd}, {Key: "verbosity", Value: "queryPlanner"}})
		plan := ex.Lookup("queryPlanner", "winningPlan").String()
		if strings.Contains(plan, `"IXSCAN"`) {
			used++
		}
		planned, code1 := find(nil)
		scanned, code2 := find(bson.D{{Key: "$natural", Value: 1}})
		if code1 != code2 || !sameDocs(planned, scanned, len(sortSpec) == 2) {
			t.Fatalf("case %d (seed %d): %v\n planner: %v (code %d)\n   scan: %v (code %d)\n plan: %s", i, seed, cmd, planned, code1, scanned, code2, plan)
		}
		if len(sortSpec) == 1 {
			// Ties may come in any order: each result must sort no later
			// than the next under the query's collation.
			srt := collatedSort(t, sortSpec, cmd)
			for j := 1; j < len(planned); j++ {
				if srt.Compare(planned[j-1], planned[j]) > 0 {
					t.Fatalf("case %d (seed %d): %v: results %d and %d are out of order: %s, %s\n plan: %s", i, seed, cmd, j-1, j, planned[j-1], planned[j], plan)
				}
			}
		}
	}
	if used < 60 {
		t.Errorf("only %d of 600 queries used an index (seed %d): the test exercises too little", used, seed)
	}
	t.Logf("%d queries used an index", used)
}

// sameDocs compares two results as sets, or in order when ordered.
func sameDocs(a, b []bsoncore.Document, ordered bool) bool {
	if len(a) != len(b) {
		return false
	}
	if !ordered {
		a, b = slices.Clone(a), slices.Clone(b)
		slices.SortFunc(a, func(x, y bsoncore.Document) int { return bytes.Compare(x, y) })
		slices.SortFunc(b, func(x, y bsoncore.Document) int { return bytes.Compare(x, y) })
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// collatedSort parses spec as find does under cmd's collation.
func collatedSort(t *testing.T, spec bson.D, cmd bson.D) *query.Sort {
	t.Helper()
	raw, _ := bson.Marshal(spec)
	srt, err := query.ParseSort(raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range cmd {
		if e.Key != "collation" {
			continue
		}
		d, _ := bson.Marshal(e.Value)
		c, err := collation.Parse(d)
		if err != nil {
			t.Fatal(err)
		}
		if c != nil {
			srt = srt.WithCollation(c)
		}
	}
	return srt
}
