package planner_test

import (
	"fmt"
	"log/slog"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/testcorpus"
)

// TestLongInSeeks: an index scan whose bounds have more intervals than the
// planner expands to key ranges (an $in of more than 4,096 values, a $nin
// of as many) checks keys one by one and seeks past the keys its bounds
// exclude. Every case's results equal a collection scan's (planHarness),
// over the _id index and secondary ones, ascending and descending fields
// and scans, compound indexes (the long list after point or range
// prefixes, or before a checked field), multikey, hashed and collated
// indexes; where the values are sparse among the keys, the scan examines
// at most about two keys per value (the one it lands on after a seek, and
// the next), where the whole index holds 2 to 10 times that.
func TestLongInSeeks(t *testing.T) {
	eng, err := engine.Open(t.TempDir(), engine.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	h := &planHarness{eng: eng}

	// "mixed": 20,000 documents with int _ids, 50 with string ones.
	const n = 20000
	var mixed []bsoncore.Document
	for i := range n {
		s := fmt.Sprintf("s%05d", i)
		if i%2 == 1 {
			s = fmt.Sprintf("S%05d", i)
		}
		mixed = append(mixed, mustDoc(t, bson.D{{"_id", i}, {"a", 2 * i}, {"b", i % 7}, {"m", bson.A{i, i + n}}, {"s", s}, {"h", 2 * i}}))
	}
	for i := range 50 {
		k := fmt.Sprintf("k%02d", i)
		mixed = append(mixed, mustDoc(t, bson.D{{"_id", k}, {"a", k}, {"b", nil}, {"m", bson.A{k}}}))
	}
	mixedSteps := []setupStep{{reset: true, docs: mixed}, {specs: []bsoncore.Document{
		mustDoc(t, bson.D{{"key", bson.D{{"a", 1}}}, {"name", "a_1"}}),
		mustDoc(t, bson.D{{"key", bson.D{{"a", -1}}}, {"name", "a_-1"}}),
		mustDoc(t, bson.D{{"key", bson.D{{"b", 1}, {"a", 1}}}, {"name", "b_1_a_1"}}),
		mustDoc(t, bson.D{{"key", bson.D{{"b", 1}, {"a", -1}}}, {"name", "b_1_a_-1"}}),
		mustDoc(t, bson.D{{"key", bson.D{{"a", 1}, {"b", -1}}}, {"name", "a_1_b_-1"}}),
		mustDoc(t, bson.D{{"key", bson.D{{"m", 1}}}, {"name", "m_1"}}),
		mustDoc(t, bson.D{{"key", bson.D{{"h", "hashed"}}}, {"name", "h_hashed"}}),
	}}}
	// "strings": 500 documents {s: "s00000"}, odd ones upper case, under
	// an index of a case-insensitive collation (few: a collection scan
	// matches an $in under a collation value by value).
	var strDocs []bsoncore.Document
	for i := range 500 {
		s := fmt.Sprintf("s%05d", i)
		if i%2 == 1 {
			s = fmt.Sprintf("S%05d", i)
		}
		strDocs = append(strDocs, mustDoc(t, bson.D{{"_id", i}, {"s", s}}))
	}
	strSteps := []setupStep{{reset: true, docs: strDocs}, {specs: []bsoncore.Document{
		mustDoc(t, bson.D{{"key", bson.D{{"s", 1}}}, {"name", "s_en2"}, {"collation", bson.D{{"locale", "en"}, {"strength", 2}}}}),
	}}}
	// "ids": 100,000 documents {_id: i}.
	var ids []bsoncore.Document
	for i := range 100000 {
		ids = append(ids, mustDoc(t, bson.D{{"_id", i}}))
	}
	idSteps := []setupStep{{reset: true, docs: ids}}

	// every is {k*step + off : k < count}, of f's values.
	every := func(count, step, off int, f func(int) any) bson.A {
		out := bson.A{}
		for k := range count {
			out = append(out, f(k*step+off))
		}
		return out
	}
	num := func(i int) any { return i }
	plus := func(a, b bson.A) bson.A { return append(append(bson.A{}, a...), b...) }
	strs := every(25, 2, 0, func(i int) any { return fmt.Sprintf("k%02d", i) })

	for _, tc := range []struct {
		name      string
		steps     []setupStep
		filter    bson.D
		sort      bson.D
		hint      string
		collation bson.D
		maxKeys   int64 // 0: not bounded
	}{
		{name: "100,000 _ids, 5,000 sparse values", steps: idSteps,
			filter: bson.D{{"_id", bson.D{{"$in", every(5000, 20, 7, num)}}}}, maxKeys: 2*5000 + 2},
		{name: "100,000 _ids, 5,000 sparse values, descending", steps: idSteps,
			filter: bson.D{{"_id", bson.D{{"$in", every(5000, 20, 7, num)}}}}, sort: bson.D{{"_id", -1}}, maxKeys: 2*5000 + 2},
		{name: "100,000 _ids, 5,000 values past the last", steps: idSteps,
			filter: bson.D{{"_id", bson.D{{"$in", every(5000, 3, 200000, num)}}}}, maxKeys: 2},
		{name: "_id, sparse, mixed types and null", steps: mixedSteps,
			filter: bson.D{{"_id", bson.D{{"$in", plus(plus(every(4000, 5, 1, num), strs), plus(bson.A{nil}, every(1000, 7, 40000, num)))}}}}, maxKeys: 2*5026 + 2},
		{name: "_id, sparse, mixed types, descending", steps: mixedSteps,
			filter: bson.D{{"_id", bson.D{{"$in", plus(every(4500, 4, 3, num), strs)}}}}, sort: bson.D{{"_id", -1}}, maxKeys: 2*4525 + 2},
		{name: "_id, dense: every key from 3,000 on", steps: mixedSteps,
			filter: bson.D{{"_id", bson.D{{"$in", every(5000, 1, 3000, num)}}}}, maxKeys: 5002},
		{name: "_id, every other key", steps: mixedSteps,
			filter: bson.D{{"_id", bson.D{{"$in", every(10000, 2, 0, num)}}}}, sort: bson.D{{"_id", -1}}},
		{name: "ascending index, descending sort", steps: mixedSteps, hint: "a_1",
			filter: bson.D{{"a", bson.D{{"$in", plus(every(5000, 6, 0, num), strs)}}}}, sort: bson.D{{"a", -1}}, maxKeys: 2*5025 + 2},
		{name: "descending index", steps: mixedSteps, hint: "a_-1",
			filter: bson.D{{"a", bson.D{{"$in", every(5000, 6, 0, num)}}}}, maxKeys: 2*5000 + 2},
		{name: "descending index, ascending sort", steps: mixedSteps, hint: "a_-1",
			filter: bson.D{{"a", bson.D{{"$in", plus(every(5000, 6, 0, num), strs)}}}}, sort: bson.D{{"a", 1}}, maxKeys: 2*5025 + 2},
		{name: "$nin: intervals with open ends", steps: mixedSteps, hint: "a_1",
			filter: bson.D{{"a", bson.D{{"$nin", every(5000, 6, 0, num)}}}}},
		{name: "$nin, descending", steps: mixedSteps, hint: "a_-1",
			filter: bson.D{{"a", bson.D{{"$nin", every(5000, 6, 0, num)}}}}, sort: bson.D{{"a", 1}}},
		{name: "compound: long list after a point prefix", steps: mixedSteps, hint: "b_1_a_1",
			filter: bson.D{{"b", bson.D{{"$in", bson.A{1, 3, 5}}}}, {"a", bson.D{{"$in", every(2000, 140, 2, num)}}}}, maxKeys: 2*3*2000 + 2},
		{name: "compound: long list after a point prefix, descending", steps: mixedSteps, hint: "b_1_a_-1",
			filter: bson.D{{"b", bson.D{{"$in", bson.A{1, 3, 5}}}}, {"a", bson.D{{"$in", every(2000, 140, 2, num)}}}}, sort: bson.D{{"b", -1}, {"a", 1}}, maxKeys: 2*3*2000 + 2},
		{name: "compound: long list after a range", steps: mixedSteps, hint: "b_1_a_-1",
			filter: bson.D{{"b", bson.D{{"$gte", 2}, {"$lte", 4}}}, {"a", bson.D{{"$in", every(5000, 6, 0, num)}}}}, sort: bson.D{{"b", -1}, {"a", 1}}},
		{name: "compound: long list first, second field checked", steps: mixedSteps, hint: "a_1_b_-1",
			filter: bson.D{{"a", bson.D{{"$in", every(5000, 6, 0, num)}}}, {"b", bson.D{{"$in", bson.A{0, 1}}}}}, maxKeys: 2*5000 + 2},
		{name: "compound: long list first, descending", steps: mixedSteps, hint: "a_1_b_-1",
			filter: bson.D{{"a", bson.D{{"$in", every(5000, 6, 0, num)}}}, {"b", bson.D{{"$gt", 2}}}}, sort: bson.D{{"a", -1}, {"b", 1}}, maxKeys: 2*5000 + 2},
		{name: "multikey", steps: mixedSteps, hint: "m_1",
			filter: bson.D{{"m", bson.D{{"$in", plus(every(5000, 8, 4, num), strs)}}}}, maxKeys: 2*5025 + 2},
		{name: "hashed", steps: mixedSteps, hint: "h_hashed",
			filter: bson.D{{"h", bson.D{{"$in", every(5000, 6, 0, num)}}}}, maxKeys: 2*5000 + 2},
		{name: "collated index", steps: strSteps, hint: "s_en2", collation: bson.D{{"locale", "en"}, {"strength", 2}},
			filter: bson.D{{"s", bson.D{{"$in", every(5000, 3, 0, func(i int) any { return fmt.Sprintf("S%05d", i) })}}}}},
		{name: "collated index, descending", steps: strSteps, hint: "s_en2", collation: bson.D{{"locale", "en"}, {"strength", 2}},
			filter: bson.D{{"s", bson.D{{"$in", every(5000, 3, 1, func(i int) any { return fmt.Sprintf("s%05d", i) })}}}}, sort: bson.D{{"s", -1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &planCase{Header: testcorpus.Header{File: fmt.Sprintf("long_in %p", &tc.steps[0]), Name: tc.name},
				Find:  testcorpus.Find{Filter: mustDoc(t, tc.filter)},
				steps: tc.steps}
			if tc.sort != nil {
				c.Sort = mustDoc(t, tc.sort)
			}
			if tc.collation != nil {
				c.Collation = mustDoc(t, tc.collation)
			}
			if tc.hint != "" {
				c.hint = bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, tc.hint)}
			}
			o, err := h.run(c) // compares with a collection scan
			if err != nil {
				t.Fatal(err)
			}
			if o.code != 0 {
				t.Fatalf("error %d", o.code)
			}
			var returned, keys, docs int64
			if _, err := fmt.Sscanf(o.plan, "returned %d, keys %d, docs %d", &returned, &keys, &docs); err != nil {
				t.Fatalf("summary of %.200s: %v", o.plan, err)
			}
			t.Logf("returned %d, keys %d, docs %d", returned, keys, docs)
			if tc.maxKeys > 0 && keys > tc.maxKeys {
				t.Errorf("%d keys examined for %d results, want at most %d", keys, returned, tc.maxKeys)
			}
		})
	}
}

func mustDoc(t *testing.T, d bson.D) bsoncore.Document {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
