package commands

import (
	"fmt"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestNumericPathIndexMatchesScan checks index plans against collection
// scans on paths with numeric components ("a.0") over nested arrays and
// documents with fields named "0": an index on such a path keys the
// element a position selects (a nested array whole, as the matcher
// compares it), and every plan — chosen or hinted — returns exactly the
// collection scan's documents. The documents are the corpus's
// (internal/query/testdata/numeric_paths.txt); those an index refuses as
// ambiguous (16746, an array whose documents also have the field "0") stay
// out, as in MongoDB.
func TestNumericPathIndexMatchesScan(t *testing.T) {
	_, run := commandRunner(t, "numeric")
	keys := []bson.D{{{Key: "a.0", Value: 1}}, {{Key: "a.0.0", Value: 1}}, {{Key: "a.1", Value: -1}}, {{Key: "a", Value: 1}}}
	indexes := bson.A{}
	for _, k := range keys {
		indexes = append(indexes, bson.D{{Key: "key", Value: k}, {Key: "name", Value: fmt.Sprint(k)}})
	}
	if r := run(bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: indexes}}); r.Lookup("ok").Double() != 1 {
		t.Fatalf("createIndexes: %s", r)
	}
	docs := bson.A{}
	for i, js := range []string{
		`42`, `[42]`, `{"0": 42}`, `[[42]]`, `[{"0": 42}]`, `{"0": [42]}`, `{"0": {"0": 42}}`, `[[[42]]]`,
		`[[{"0": 42}]]`, `[{"0": [42]}]`, `{"0": [[42]]}`, `{"0": [{"0": 42}]}`, `{"0": {"0": [42]}}`,
		`[[1, 2], [3]]`, `[1, [2]]`, `{"0": [1, 2]}`, `[[1, 2], 1]`, `[[1, 2]]`, `[5, {"x": 1}]`, `[]`, `[[]]`,
		`[null]`, `[[null]]`, `{"0": null}`, `[[42, 43], [41]]`, `[41, [42]]`, `null`,
	} {
		var d bson.D
		if err := bson.UnmarshalExtJSON([]byte(fmt.Sprintf(`{"_id": %d, "a": %s}`, i, js)), false, &d); err != nil {
			t.Fatal(js, err)
		}
		docs = append(docs, d)
	}
	r := run(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}, {Key: "ordered", Value: false}})
	if n := r.Lookup("n").Int32(); n < 20 {
		t.Fatalf("insert: only %d documents went in: %s", n, r)
	}
	if werrs, ok := r.Lookup("writeErrors").ArrayOK(); ok {
		vals, _ := werrs.Values()
		for _, v := range vals {
			if code := v.Document().Lookup("code").Int32(); code != 16746 {
				t.Fatalf("unexpected insert error %s", v)
			}
		}
	}
	ids := func(filter bson.D, hint any) []int32 {
		cmd := bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: filter}}
		if hint != nil {
			cmd = append(cmd, bson.E{Key: "hint", Value: hint})
		}
		r := run(cmd)
		if _, ok := r.Lookup("code").Int32OK(); ok {
			t.Fatalf("%v hint %v: %s", filter, hint, r)
		}
		vals, _ := r.Lookup("cursor", "firstBatch").Array().Values()
		var out []int32
		for _, v := range vals {
			out = append(out, bsoncore.Document(v.Document()).Lookup("_id").Int32())
		}
		slices.Sort(out)
		return out
	}
	for _, path := range []string{"a.0", "a.0.0", "a.1"} {
		for _, cond := range []any{
			42, 1, 2, nil, bson.A{1, 2}, bson.A{}, bson.A{42},
			bson.D{{Key: "$gt", Value: 41}}, bson.D{{Key: "$lte", Value: 42}},
			bson.D{{Key: "$in", Value: bson.A{1, 42, nil}}}, bson.D{{Key: "$ne", Value: 42}},
			bson.D{{Key: "$exists", Value: true}}, bson.D{{Key: "$exists", Value: false}},
			bson.D{{Key: "$elemMatch", Value: bson.D{{Key: "$eq", Value: 42}}}},
			bson.D{{Key: "$gte", Value: bson.A{}}}, bson.D{{Key: "$type", Value: "array"}},
		} {
			filter := bson.D{{Key: path, Value: cond}}
			scan := ids(filter, bson.D{{Key: "$natural", Value: 1}})
			if got := ids(filter, nil); !slices.Equal(got, scan) {
				t.Errorf("%v: planner %v, scan %v", filter, got, scan)
			}
			for _, k := range keys {
				if got := ids(filter, fmt.Sprint(k)); !slices.Equal(got, scan) {
					t.Errorf("%v hint %v: index %v, scan %v", filter, k, got, scan)
				}
			}
		}
	}
	// A partial index whose filter is on a numeric path holds only some
	// documents; no query implies that filter, so {x: 1} must not be
	// answered from it.
	if r := run(bson.D{{Key: "createIndexes", Value: "p"}, {Key: "indexes", Value: bson.A{bson.D{
		{Key: "key", Value: bson.D{{Key: "x", Value: 1}}}, {Key: "name", Value: "x_partial"},
		{Key: "partialFilterExpression", Value: bson.D{{Key: "a.0", Value: bson.D{{Key: "$gt", Value: 5}}}}},
	}}}}); r.Lookup("ok").Double() != 1 {
		t.Fatalf("createIndexes: %s", r)
	}
	run(bson.D{{Key: "insert", Value: "p"}, {Key: "documents", Value: bson.A{
		bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: 1}, {Key: "a", Value: bson.A{1}}},
		bson.D{{Key: "_id", Value: 2}, {Key: "x", Value: 1}, {Key: "a", Value: bson.A{9}}},
	}}})
	r = run(bson.D{{Key: "count", Value: "p"}, {Key: "query", Value: bson.D{{Key: "x", Value: 1}}}})
	if n := r.Lookup("n").Int32(); n != 2 {
		t.Errorf("{x: 1} beside a partial index on a.0: count %d, want 2: %s", n, r)
	}
	// The example, as MongoDB answers it: the element "a.0"
	// selects is compared whole.
	if got := ids(bson.D{{Key: "a.0", Value: 1}}, fmt.Sprint(keys[0])); !slices.Equal(got, []int32{14, 15}) {
		t.Errorf(`{"a.0": 1} through the index: got %v, want [14 15]`, got)
	}
}
