package commands

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/query"
)

var diffCases = flag.Int("diff.cases", 3000, "random filters in TestPlannerMatchesCollectionScan")

// TestPlannerMatchesCollectionScan is the planner's differential test: for
// random documents, indexes and filters, every find returns the same
// documents with the planner's choice as with a forced collection scan.
func TestPlannerMatchesCollectionScan(t *testing.T) {
	t.Parallel() // its own engine; the invariants pass runs these five side by side
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 11))
	t.Logf("seed %d", seed)
	_, exec := commandRunner(t, "diff")
	run := exec
	indexes := bson.A{}
	for _, k := range []bson.D{{{Key: "a", Value: 1}}, {{Key: "b", Value: -1}}, {{Key: "c.d", Value: 1}}, {{Key: "a", Value: 1}, {Key: "b", Value: -1}}, {{Key: "e", Value: -1}, {Key: "a", Value: 1}}, {{Key: "f", Value: 1}}, {{Key: "f", Value: 1}, {Key: "g", Value: -1}}} {
		name := fmt.Sprint(k)
		indexes = append(indexes, bson.D{{Key: "key", Value: k}, {Key: "name", Value: name}})
	}
	// Indexes the planner may use only for some filters: sparse (not for
	// null or missing), partial (only when the filter implies its
	// expression), hidden (never).
	indexes = append(indexes,
		bson.D{{Key: "key", Value: bson.D{{Key: "e", Value: 1}}}, {Key: "name", Value: "e_sparse"}, {Key: "sparse", Value: true}},
		bson.D{{Key: "key", Value: bson.D{{Key: "g", Value: 1}}}, {Key: "name", Value: "g_partial"}, {Key: "partialFilterExpression", Value: bson.D{{Key: "g", Value: bson.D{{Key: "$gt", Value: 1}}}}}},
		bson.D{{Key: "key", Value: bson.D{{Key: "b", Value: 1}, {Key: "g", Value: 1}}}, {Key: "name", Value: "b_g_partial"}, {Key: "partialFilterExpression", Value: bson.D{{Key: "g", Value: bson.D{{Key: "$exists", Value: true}}}}}},
		bson.D{{Key: "key", Value: bson.D{{Key: "c.d", Value: -1}}}, {Key: "name", Value: "c.d_hidden"}, {Key: "hidden", Value: true}},
		// Hashed indexes: point bounds on hashes, the filter applied
		// again after FETCH; on a field inside a subdocument too, sparse,
		// and compound.
		bson.D{{Key: "key", Value: bson.D{{Key: "h", Value: "hashed"}}}, {Key: "name", Value: "h_hashed"}},
		bson.D{{Key: "key", Value: bson.D{{Key: "s.env", Value: "hashed"}}}, {Key: "name", Value: "s.env_hashed"}, {Key: "sparse", Value: true}},
		bson.D{{Key: "key", Value: bson.D{{Key: "f", Value: 1}, {Key: "h", Value: "hashed"}}}, {Key: "name", Value: "f_h_hashed"}},
		// Multikey indexes whose other paths hold no arrays: bounds on
		// those intersect and compound (multiKeyPaths).
		bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}, {Key: "g", Value: 1}}}, {Key: "name", Value: "a_g"}},
		bson.D{{Key: "key", Value: bson.D{{Key: "c.d", Value: 1}, {Key: "c.e", Value: 1}}}, {Key: "name", Value: "cd_ce"}},
		bson.D{{Key: "key", Value: bson.D{{Key: "m.p", Value: 1}, {Key: "m.q", Value: -1}}}, {Key: "name", Value: "mp_mq"}},
		// Wildcard indexes: one path per plan, ({$_path, value}) keys.
		bson.D{{Key: "key", Value: bson.D{{Key: "w.$**", Value: 1}}}, {Key: "name", Value: "w_wildcard"}},
		bson.D{{Key: "key", Value: bson.D{{Key: "$**", Value: -1}}}, {Key: "name", Value: "all_wildcard"}, {Key: "wildcardProjection", Value: bson.D{{Key: "h", Value: 1}, {Key: "w.q", Value: 1}}}},
	)
	if r := run(bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: indexes}}); r.Lookup("ok").Double() != 1 {
		t.Fatalf("createIndexes: %s", r)
	}
	// In half the runs m is sometimes an array, so that m.p and m.q share
	// a multikey prefix and cannot compound; otherwise only m.p holds
	// arrays.
	mArrays := rng.IntN(2) == 0
	docs := bson.A{}
	for i := range 300 {
		d := bson.D{{Key: "_id", Value: i}}
		for _, f := range []string{"a", "b", "e"} {
			if v, ok := randomValue(rng); ok {
				d = append(d, bson.E{Key: f, Value: v})
			}
		}
		// f and g never hold arrays: their indexes stay non-multikey, so
		// they can give order and intersect ranges.
		for _, f := range []string{"f", "g", "h"} {
			if v, ok := randomValue(rng); ok && !isArray(v) {
				d = append(d, bson.E{Key: f, Value: v})
			}
		}
		if p, ok := randomValue(rng); ok {
			q, _ := randomValue(rng)
			if isArray(q) {
				q = nil
			}
			m := bson.D{{Key: "p", Value: p}, {Key: "q", Value: q}}
			if mArrays && rng.IntN(4) == 0 {
				d = append(d, bson.E{Key: "m", Value: bson.A{m, bson.D{{Key: "q", Value: rng.IntN(5)}}}})
			} else {
				d = append(d, bson.E{Key: "m", Value: m})
			}
		}
		if w, ok := randomWild(rng); ok {
			d = append(d, bson.E{Key: "w", Value: w})
		}
		// s is a subdocument (hashed indexes refuse arrays on the path).
		if v, ok := randomValue(rng); ok && !isArray(v) && rng.IntN(3) > 0 {
			d = append(d, bson.E{Key: "s", Value: bson.D{{Key: "env", Value: v}}})
		}
		if rng.IntN(2) == 0 {
			if rng.IntN(3) == 0 {
				sub := bson.A{}
				for range rng.IntN(3) {
					v, _ := randomValue(rng)
					el := bson.D{{Key: "d", Value: v}}
					if e, ok := randomValue(rng); ok && !isArray(e) {
						el = append(el, bson.E{Key: "e", Value: e})
					}
					sub = append(sub, el)
				}
				d = append(d, bson.E{Key: "c", Value: sub})
			} else {
				v, _ := randomValue(rng)
				d = append(d, bson.E{Key: "c", Value: bson.D{{Key: "d", Value: v}}})
			}
		}
		docs = append(docs, d)
	}
	// Unordered: the compound {a, b} index refuses documents where both are
	// arrays (171 CannotIndexParallelArrays, as MongoDB); the rest go in.
	r := run(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}, {Key: "ordered", Value: false}})
	if n := r.Lookup("n").Int32(); n < 200 {
		t.Fatalf("insert: only %d documents went in: %s", n, r)
	}
	if werrs, ok := r.Lookup("writeErrors").ArrayOK(); ok {
		vals, _ := werrs.Values()
		for _, v := range vals {
			if code := v.Document().Lookup("code").Int32(); code != 171 {
				t.Fatalf("unexpected insert error %s", v)
			}
		}
	}
	results := func(c findCase, hint any) ([]bsoncore.Document, int32) {
		cmd := c.command()
		if hint != nil {
			cmd = append(cmd, bson.E{Key: "hint", Value: hint})
		}
		return firstBatchOf(run(cmd))
	}
	fields := []string{"a", "b", "c.d", "c.e", "e", "f", "g", "h", "s.env", "w", "w.p", "w.q", "w.q.r", "m.p", "m.q"}
	used, indexed, ordered, orderedMK, orderedWild, covered, ors, partial, hashed, wild := 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
	for i := range *diffCases {
		c := randomCase(rng, fields)
		ex := run(bson.D{{Key: "explain", Value: c.command()}, {Key: "verbosity", Value: "queryPlanner"}})
		if plan, ok := ex.Lookup("queryPlanner", "winningPlan").DocumentOK(); ok {
			if strings.Contains(plan.String(), `"IXSCAN"`) {
				indexed++
				if c.sort != nil && !strings.Contains(plan.String(), `"SORT"`) {
					ordered++
					if strings.Contains(plan.String(), `"isMultiKey": true`) {
						orderedMK++
					}
					if strings.Contains(plan.String(), `_wildcard"`) {
						orderedWild++
					}
				}
				if strings.Contains(plan.String(), `"PROJECTION_COVERED"`) {
					covered++
				}
				if strings.Contains(plan.String(), `"OR"`) {
					ors++
				}
				if strings.Contains(plan.String(), `_partial"`) {
					partial++
				}
				if strings.Contains(plan.String(), `_hashed"`) {
					hashed++
				}
				if strings.Contains(plan.String(), `_wildcard"`) {
					wild++
				}
				if strings.Contains(plan.String(), `"c.d_hidden"`) {
					t.Fatalf("case %d (seed %d): the hidden index was chosen: %s", i, seed, plan)
				}
			}
		}
		planned, code1 := results(c, nil)
		scanned, code2 := results(c, bson.D{{Key: "$natural", Value: 1}})
		if code1 != code2 || !c.same(planned, scanned) {
			t.Fatalf("case %d (seed %d): %v\n planner: %v (code %d)\n   scan: %v (code %d)\n plan: %s", i, seed, c.command(), planned, code1, scanned, code2, ex.Lookup("queryPlanner", "winningPlan"))
		}
		count := func(hint any) (int32, int32) {
			cmd := bson.D{{Key: "count", Value: "c"}, {Key: "query", Value: c.filter}}
			if hint != nil {
				cmd = append(cmd, bson.E{Key: "hint", Value: hint})
			}
			r := run(cmd)
			if code, ok := r.Lookup("code").Int32OK(); ok {
				return 0, code
			}
			return r.Lookup("n").Int32(), 0
		}
		if n1, code1 := count(nil); code1 != code2 || code1 == 0 && n1 != int32(len(scanned)) && c.skip == 0 && c.limit == 0 {
			t.Fatalf("case %d (seed %d): count %v = %d (code %d), find found %d (code %d)", i, seed, c.filter, n1, code1, len(scanned), code2)
		}
		if c.sort != nil && !c.tieBreak && c.proj == nil && !sortedBy(planned, c.sort) {
			t.Fatalf("case %d (seed %d): %v: planner result not sorted: %v", i, seed, c.command(), planned)
		}
		if len(scanned) > 0 {
			used++
		}
	}
	if indexed < *diffCases/4 {
		t.Fatalf("only %d of %d finds were planned on an index (seed %d); the test would not see planner bugs", indexed, *diffCases, seed)
	}
	if ordered < *diffCases/50 || orderedMK < *diffCases/1000 || orderedWild < *diffCases/1000 {
		t.Fatalf("only %d of %d finds took their order from an index, %d from a multikey one, %d from a wildcard one (seed %d)", ordered, *diffCases, orderedMK, orderedWild, seed)
	}
	if ors < *diffCases/100 || partial < *diffCases/100 {
		t.Fatalf("only %d $or plans and %d partial index plans of %d finds (seed %d)", ors, partial, *diffCases, seed)
	}
	if covered < *diffCases/100 {
		t.Fatalf("only %d of %d finds were covered (seed %d)", covered, *diffCases, seed)
	}
	if hashed < *diffCases/50 || wild < *diffCases/50 {
		t.Fatalf("only %d of %d finds used a hashed index, %d a wildcard one (seed %d)", hashed, *diffCases, wild, seed)
	}
	t.Logf("%d finds, %d planned on an index, %d ordered by one (%d multikey, %d wildcard), %d covered, %d $or plans, %d on partial indexes, %d on hashed indexes, %d on wildcard indexes, %d matched documents", *diffCases, indexed, ordered, orderedMK, orderedWild, covered, ors, partial, hashed, wild, used)
	if used < *diffCases/10 {
		t.Fatalf("only %d of %d filters matched anything (seed %d); the generator is too narrow to test the planner", used, *diffCases, seed)
	}
}

// findCase is one random find.
type findCase struct {
	filter, sort, proj bson.D
	tieBreak           bool // the sort ends with _id, so the order is total
	skip, limit        int
}

func (c findCase) command() bson.D {
	cmd := bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: c.filter}, {Key: "batchSize", Value: 1000}}
	if c.sort != nil {
		cmd = append(cmd, bson.E{Key: "sort", Value: c.sort})
	}
	if c.proj != nil {
		cmd = append(cmd, bson.E{Key: "projection", Value: c.proj})
	}
	if c.skip > 0 {
		cmd = append(cmd, bson.E{Key: "skip", Value: c.skip})
	}
	if c.limit > 0 {
		cmd = append(cmd, bson.E{Key: "limit", Value: c.limit})
	}
	return cmd
}

// same compares two answers: in order when the order is total, as
// multisets otherwise (only cases without skip/limit have partial orders).
// Field order is not compared: a covered projection rebuilds documents in
// key pattern order. Values are compared byte for byte, BSON types
// included: a covered plan must give back int64 1 as int64, not int32.
func (c findCase) same(a, b []bsoncore.Document) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = normalized(a), normalized(b)
	byValueThenBytes := func(x, y bsoncore.Document) int {
		if c := bsonx.CompareDocuments(x, y); c != 0 {
			return c
		}
		return bytes.Compare(x, y)
	}
	if !c.tieBreak {
		a, b = slices.Clone(a), slices.Clone(b)
		slices.SortFunc(a, byValueThenBytes)
		slices.SortFunc(b, byValueThenBytes)
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// normalized sorts every document's fields by name, at every level.
func normalized(docs []bsoncore.Document) []bsoncore.Document {
	out := make([]bsoncore.Document, len(docs))
	for i, d := range docs {
		out[i] = sortFields(d)
	}
	return out
}

func sortFields(d bsoncore.Document) bsoncore.Document {
	elems, _ := d.Elements()
	slices.SortStableFunc(elems, func(x, y bsoncore.Element) int { return strings.Compare(x.Key(), y.Key()) })
	b := bsoncore.NewDocumentBuilder()
	for _, el := range elems {
		v := el.Value()
		if sub, ok := v.DocumentOK(); ok {
			b.AppendDocument(el.Key(), sortFields(sub))
			continue
		}
		b.AppendValue(el.Key(), v)
	}
	return b.Build()
}

func sortedBy(docs []bsoncore.Document, spec bson.D) bool {
	raw, _ := bson.Marshal(spec)
	s, err := query.ParseSort(raw)
	if err != nil {
		return false
	}
	for i := 1; i < len(docs); i++ {
		if s.CompareKeys(s.Key(docs[i-1]), s.Key(docs[i])) > 0 {
			return false
		}
	}
	return true
}

// randomCase draws a find: a random filter, and sometimes a sort (on the
// indexed fields, either direction), a projection, skip and limit (only
// with a total order, so that both answers must agree exactly).
func randomCase(rng *rand.Rand, fields []string) findCase {
	if rng.IntN(8) == 0 {
		// A filter, sort and projection over the never-array fields
		// only: coverable by the {f: 1, g: -1} index.
		c := findCase{filter: randomFilter(rng, []string{"f", "g"}), proj: bson.D{{Key: "g", Value: 1}, {Key: "f", Value: 1}, {Key: "_id", Value: 0}}}
		if rng.IntN(2) == 0 {
			c.sort = bson.D{{Key: "f", Value: []int{1, -1}[rng.IntN(2)]}}
		}
		return c
	}
	if rng.IntN(10) == 0 {
		// A point on the multikey field of {a: 1, g: 1} or {m.p: 1,
		// m.q: -1}, sorted by the other field, which holds no arrays:
		// the index gives the order.
		// Or a range on h, sorted by h: the projected wildcard index
		// serves and orders it (h never holds arrays).
		p := [][2]string{{"a", "g"}, {"m.p", "m.q"}, {"h", "h"}}[rng.IntN(3)]
		c := findCase{filter: bson.D{{Key: p[0], Value: rng.IntN(5)}}, sort: bson.D{{Key: p[1], Value: []int{1, -1}[rng.IntN(2)]}}}
		if p[0] == "h" {
			c.filter = bson.D{}
		}
		if p[0] == "h" || rng.IntN(2) == 0 {
			c.filter = append(c.filter, bson.E{Key: p[1], Value: bson.D{{Key: "$gte", Value: rng.IntN(3)}, {Key: "$lt", Value: 4}}})
		}
		return c
	}
	c := findCase{filter: randomFilter(rng, fields)}
	if rng.IntN(2) == 0 {
		paths := []string{"a", "b", "e", "_id", "c.d", "c.e", "f", "g", "f", "g", "h", "m.p", "m.q", "m.q"}
		for range 1 + rng.IntN(2) {
			c.sort = append(c.sort, bson.E{Key: paths[rng.IntN(len(paths))], Value: []int{1, -1}[rng.IntN(2)]})
		}
		c.sort = dedupKeys(c.sort)
		if rng.IntN(2) == 0 {
			if c.sort[len(c.sort)-1].Key != "_id" {
				c.sort = append(c.sort, bson.E{Key: "_id", Value: []int{1, -1}[rng.IntN(2)]})
			}
			c.tieBreak = true
			c.skip, c.limit = rng.IntN(3)*rng.IntN(2), rng.IntN(8)
		} else if c.sort[len(c.sort)-1].Key == "_id" {
			c.tieBreak = true
		}
	}
	switch rng.IntN(9) {
	case 4:
		c.proj = bson.D{{Key: "f", Value: 1}, {Key: "_id", Value: 0}}
	case 5:
		c.proj = bson.D{{Key: "g", Value: 1}, {Key: "f", Value: true}, {Key: "_id", Value: false}}
	case 0:
		c.proj = bson.D{{Key: "a", Value: 1}}
	case 1:
		c.proj = bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 1}, {Key: "_id", Value: 0}}
	case 2:
		c.proj = bson.D{{Key: "b", Value: 0}}
	case 3:
		c.proj = bson.D{{Key: "c.d", Value: 1}, {Key: "_id", Value: 0}}
	}
	return c
}

// randomWild draws the value of w, which wildcard indexes key leaf by
// leaf: nested documents, arrays of documents, empty ones, scalars.
func randomWild(rng *rand.Rand) (any, bool) {
	v := func() any { x, _ := randomValue(rng); return x }
	switch rng.IntN(7) {
	case 0:
		return nil, false
	case 1:
		return bson.D{{Key: "p", Value: v()}, {Key: "q", Value: bson.D{{Key: "r", Value: v()}}}}, true
	case 2:
		return bson.A{bson.D{{Key: "p", Value: v()}}, bson.D{{Key: "q", Value: bson.D{{Key: "r", Value: v()}}}}}, true
	case 3:
		return bson.D{{Key: "p", Value: v()}, {Key: "q", Value: bson.A{bson.D{{Key: "r", Value: v()}}, v(), bson.D{}}}}, true
	case 4:
		return bson.D{{Key: "q", Value: bson.D{}}}, true
	case 5:
		return bson.D{{Key: "q", Value: v()}}, true
	}
	return v(), true
}

func isArray(v any) bool { _, ok := v.(bson.A); return ok }

func dedupKeys(d bson.D) bson.D {
	var out bson.D
	seen := map[string]bool{}
	for _, e := range d {
		if !seen[e.Key] {
			seen[e.Key] = true
			out = append(out, e)
		}
	}
	return out
}

// randomValue draws from a small, type-mixed domain so filters collide with
// documents; ok is false for "missing".
func randomValue(rng *rand.Rand) (any, bool) {
	switch rng.IntN(13) {
	case 0:
		return nil, false
	case 1:
		return nil, true // null
	case 2:
		return int32(rng.IntN(5)), true
	case 3:
		return float64(rng.IntN(5)) + 0.5*float64(rng.IntN(2)), true
	case 4:
		return int64(rng.IntN(5)), true
	case 5:
		return []string{"x", "y", "z"}[rng.IntN(3)], true
	case 6:
		a := bson.A{}
		for range rng.IntN(4) {
			a = append(a, rng.IntN(5))
		}
		return a, true
	case 7:
		return bson.A{bson.A{rng.IntN(3)}, rng.IntN(5)}, true
	case 8:
		return bson.D{{Key: "k", Value: rng.IntN(2)}}, true
	case 9:
		return rng.IntN(2) == 0, true
	case 10:
		return bson.Undefined{}, true
	case 11:
		d, _ := bson.ParseDecimal128(fmt.Sprintf("%d.0", rng.IntN(5)))
		return d, true
	}
	return bson.A{nil, rng.IntN(5)}, true
}

func randomFilter(rng *rand.Rand, fields []string) bson.D {
	f := randomConditions(rng, fields)
	if rng.IntN(5) == 0 {
		or := bson.A{}
		for range 1 + rng.IntN(3) {
			or = append(or, randomConditions(rng, fields))
		}
		f = append(f[:rng.IntN(2)*len(f)], bson.E{Key: "$or", Value: or})
	}
	return f
}

func randomConditions(rng *rand.Rand, fields []string) bson.D {
	var f bson.D
	for range 1 + rng.IntN(2) {
		field := fields[rng.IntN(len(fields))]
		v, ok := randomValue(rng)
		if !ok {
			v = nil
		}
		switch rng.IntN(12) {
		case 11:
			// An $in (or $nin) of more than maxRanges (4,096) values: the
			// scan checks keys against the bounds and seeks between them.
			// Quarter steps from -10 meet the domain's numbers now and then.
			w, _ := randomValue(rng)
			list := bson.A{v, w}
			for k := range 4100 + rng.IntN(50) {
				list = append(list, float64(k)/4-10)
			}
			op := []string{"$in", "$nin"}[rng.IntN(2)]
			f = append(f, bson.E{Key: field, Value: bson.D{{Key: op, Value: list}}})
		case 10:
			// $type: covered on indexes with type bits, so the rebuilt
			// values' types must be the stored ones.
			t := []string{"int", "long", "double", "decimal", "null", "string", "object", "array", "undefined"}[rng.IntN(9)]
			f = append(f, bson.E{Key: field, Value: bson.D{{Key: "$type", Value: t}}})
		case 9:
			// An empty document: wildcard indexes key {} as a value.
			f = append(f, bson.E{Key: field, Value: bson.D{{Key: "$eq", Value: bson.D{}}}})
		case 0, 1:
			f = append(f, bson.E{Key: field, Value: v})
		case 2:
			f = append(f, bson.E{Key: field, Value: bson.D{{Key: "$eq", Value: v}}})
		case 3:
			w, _ := randomValue(rng)
			f = append(f, bson.E{Key: field, Value: bson.D{{Key: "$in", Value: bson.A{v, w}}}})
		case 4:
			f = append(f, bson.E{Key: field, Value: bson.D{{Key: "$gt", Value: rng.IntN(5)}}})
		case 5:
			f = append(f, bson.E{Key: field, Value: bson.D{{Key: "$gte", Value: rng.IntN(5)}, {Key: "$lt", Value: rng.IntN(5)}}})
		case 6:
			f = append(f, bson.E{Key: field, Value: bson.D{{Key: "$lte", Value: []string{"x", "y"}[rng.IntN(2)]}}})
		case 7:
			f = append(f, bson.E{Key: "$and", Value: bson.A{bson.D{{Key: field, Value: v}}, bson.D{{Key: field, Value: bson.D{{Key: "$ne", Value: rng.IntN(5)}}}}}})
		case 8:
			f = append(f, bson.E{Key: field, Value: bson.D{{Key: "$exists", Value: rng.IntN(2) == 0}, {Key: "$gte", Value: 1.5}}})
		}
	}
	return f
}

// firstBatchOf is a find reply's first batch, or its error code.
func firstBatchOf(r bsoncore.Document) ([]bsoncore.Document, int32) {
	if code, ok := r.Lookup("code").Int32OK(); ok {
		return nil, code
	}
	vals, _ := r.Lookup("cursor", "firstBatch").Array().Values()
	out := make([]bsoncore.Document, len(vals))
	for i, v := range vals {
		out[i] = v.Document()
	}
	return out, 0
}
