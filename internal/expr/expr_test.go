package expr_test

import (
	"testing"

	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func parseJSON(t testing.TB, s string) bsoncore.Document {
	t.Helper()
	var raw bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(s), false, &raw); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return bsoncore.Document(raw)
}

// canonical prints a value as canonical extended JSON, so that comparing
// strings compares types too ("missing" for Missing).
func canonical(t *testing.T, v bsoncore.Value) string {
	if expr.IsMissing(v) {
		return "missing"
	}
	d := bsoncore.NewDocumentBuilder().AppendValue("v", v).Build()
	b, err := bson.MarshalExtJSON(bson.Raw(d), true, false)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The document every case evaluates against.
const evalDoc = `{"_id": 1, "i": 7, "neg": -7, "l": {"$numberLong": "9000000000"}, "d": 2.5,
	"dec": {"$numberDecimal": "1.10"}, "s": "str", "n": null, "t": true, "z": 0,
	"maxi": 2147483647, "mini": -2147483648, "maxl": {"$numberLong": "9223372036854775807"},
	"minl": {"$numberLong": "-9223372036854775808"},
	"arr": [{"b": 1}, {"b": [2, 3]}, 4, [{"b": 5}], {"c": 6}], "sub": {"b": {"c": 8}},
	"date": {"$date": "2020-01-01T00:00:00Z"}, "empty": []}`

func TestEval(t *testing.T) {
	doc := parseJSON(t, evalDoc)
	for _, tc := range []struct {
		expr string // the value of {"e": …}
		want string // relaxed JSON of the result in {"v": …}, "missing", or "" with code
		code mongoerr.Code
	}{
		// Literals, field paths and variables.
		{`1`, `1`, 0},
		{`"plain"`, `"plain"`, 0},
		{`"$i"`, `7`, 0},
		{`"$nope"`, `missing`, 0},
		{`"$sub.b.c"`, `8`, 0},
		{`"$sub.b.nope"`, `missing`, 0},
		{`"$s.x"`, `missing`, 0},
		{`"$arr.b"`, `[1, [2, 3], [5]]`, 0},
		{`"$arr.0"`, `[[]]`, 0},
		{`"$$ROOT._id"`, `1`, 0},
		{`"$$CURRENT.i"`, `7`, 0},
		{`"$$REMOVE"`, `missing`, 0},
		{`{"$literal": "$i"}`, `"$i"`, 0},
		{`{"$literal": {"$add": 1}}`, `{"$add": 1}`, 0},
		{`{"x": "$i", "y": "$nope", "z": {"$add": [1, 1]}}`, `{"x": 7, "z": 2}`, 0},
		{`["$i", "$nope"]`, `[7, null]`, 0},
		{`"$$nope"`, ``, 17276},
		{`"$"`, ``, 16872},
		{`"$a..b"`, ``, 15998},
		{`{"$frob": 1}`, ``, 168},
		{`{"$add": [1], "x": 1}`, ``, 15983},
		{`{"a.b": 1}`, ``, 16412},

		// Comparison.
		{`{"$eq": ["$i", 7.0]}`, `true`, 0},
		{`{"$eq": ["$nope", null]}`, `false`, 0},
		{`{"$lt": ["$nope", null]}`, `true`, 0},
		{`{"$gt": ["$s", "$i"]}`, `true`, 0},
		{`{"$ne": ["$dec", 1.1]}`, `true`, 0},
		{`{"$cmp": ["$i", 8]}`, `-1`, 0},
		{`{"$cmp": ["b", "a"]}`, `1`, 0},
		{`{"$gte": [[1, 2], [1]]}`, `true`, 0},
		{`{"$eq": [1]}`, ``, 16020},

		// Boolean and truthiness.
		{`{"$and": [1, "x", []]}`, `true`, 0},
		{`{"$and": [1, 0]}`, `false`, 0},
		{`{"$and": []}`, `true`, 0},
		{`{"$or": []}`, `false`, 0},
		{`{"$or": ["$nope", "$n", "$z", {"$numberDecimal": "0.00"}]}`, `false`, 0},
		{`{"$or": [{"$numberDouble": "NaN"}]}`, `true`, 0},
		{`{"$not": ["$t"]}`, `false`, 0},
		{`{"$not": "$nope"}`, `true`, 0},
		{`{"$not": [1, 2]}`, ``, 16020},

		// Conditionals.
		{`{"$cond": ["$t", "yes", "no"]}`, `"yes"`, 0},
		{`{"$cond": {"if": "$z", "then": "yes", "else": "no"}}`, `"no"`, 0},
		{`{"$cond": {"if": 1, "then": 2}}`, ``, 17082},
		{`{"$cond": {"if": 1, "then": 2, "else": 3, "x": 4}}`, ``, 17083},
		{`{"$cond": [1, 2]}`, ``, 16020},
		{`{"$ifNull": ["$nope", "$n", "dflt"]}`, `"dflt"`, 0},
		{`{"$ifNull": ["$i", "dflt"]}`, `7`, 0},
		{`{"$ifNull": ["$nope", "$nope2"]}`, `missing`, 0},
		{`{"$ifNull": ["$i"]}`, ``, 1257300},

		// Arrays.
		{`{"$in": [2, [1, 2.0]]}`, `true`, 0},
		{`{"$in": ["$nope", [null]]}`, `false`, 0},
		{`{"$in": [1, "$i"]}`, ``, 40081},
		{`{"$size": "$arr"}`, `5`, 0},
		{`{"$size": "$empty"}`, `0`, 0},
		{`{"$size": "$nope"}`, ``, 17124},

		// Arithmetic: result types.
		{`{"$add": [1, 2]}`, `3`, 0},
		{`{"$add": ["$maxi", 1]}`, `{"$numberLong": "2147483648"}`, 0},
		{`{"$add": ["$maxl", 1]}`, `9.223372036854775808E+18`, 0},
		{`{"$add": [1, "$l"]}`, `{"$numberLong": "9000000001"}`, 0},
		{`{"$add": [1, 0.5]}`, `1.5`, 0},
		{`{"$add": ["$dec", 1]}`, `{"$numberDecimal": "2.10"}`, 0},
		{`{"$add": [1, "$nope"]}`, `null`, 0},
		{`{"$add": ["$date", 1000]}`, `{"$date": "2020-01-01T00:00:01Z"}`, 0},
		{`{"$add": []}`, `0`, 0},
		{`{"$add": ["$s", 1]}`, ``, 16554},
		{`{"$add": ["$date", "$date"]}`, ``, 16612},
		{`{"$subtract": [10, 2.5]}`, `7.5`, 0},
		{`{"$subtract": ["$mini", 1]}`, `{"$numberLong": "-2147483649"}`, 0},
		{`{"$subtract": ["$date", {"$date": "2019-12-31T00:00:00Z"}]}`, `{"$numberLong": "86400000"}`, 0},
		{`{"$subtract": ["$date", 86400000]}`, `{"$date": "2019-12-31T00:00:00Z"}`, 0},
		{`{"$subtract": [1, "$date"]}`, ``, 16613},
		{`{"$subtract": ["$s", 1]}`, ``, 16556},
		{`{"$subtract": [1, "$n"]}`, `null`, 0},
		{`{"$multiply": [3, 4]}`, `12`, 0},
		{`{"$multiply": ["$maxi", 2]}`, `{"$numberLong": "4294967294"}`, 0},
		{`{"$multiply": ["$maxl", 2]}`, `1.8446744073709552E+19`, 0},
		{`{"$multiply": ["$dec", 2]}`, `{"$numberDecimal": "2.20"}`, 0},
		{`{"$multiply": [2, "$s"]}`, ``, 16555},
		{`{"$divide": [7, 2]}`, `3.5`, 0},
		{`{"$divide": [6, 3]}`, `2.0`, 0},
		{`{"$divide": ["$dec", 4]}`, `{"$numberDecimal": "0.275"}`, 0},
		{`{"$divide": [{"$numberDecimal": "1"}, 3]}`, `{"$numberDecimal": "0.3333333333333333333333333333333333"}`, 0},
		{`{"$divide": [{"$numberDecimal": "10"}, 4]}`, `{"$numberDecimal": "2.5"}`, 0},
		{`{"$divide": [1, 0]}`, ``, 2},
		{`{"$divide": [1, {"$numberDecimal": "0"}]}`, ``, 2},
		{`{"$divide": ["$s", 1]}`, ``, 14},
		{`{"$divide": [1, null]}`, `null`, 0},
		{`{"$mod": [7, 3]}`, `1`, 0},
		{`{"$mod": [-7, 3]}`, `-1`, 0},
		{`{"$mod": [7, 2.0]}`, `1`, 0},
		{`{"$mod": [7.5, 2]}`, `1.5`, 0},
		{`{"$mod": ["$l", 7]}`, `{"$numberLong": "5"}`, 0},
		{`{"$mod": [{"$numberDecimal": "7.5"}, 2]}`, `{"$numberDecimal": "1.5"}`, 0},
		{`{"$mod": [7, 0]}`, ``, 16610},
		{`{"$mod": ["$s", 2]}`, ``, 16611},
		{`{"$abs": "$neg"}`, `7`, 0},
		{`{"$abs": "$mini"}`, `{"$numberLong": "2147483648"}`, 0},
		{`{"$abs": -2.5}`, `2.5`, 0},
		{`{"$abs": {"$numberDecimal": "-1.5"}}`, `{"$numberDecimal": "1.5"}`, 0},
		{`{"$abs": "$minl"}`, ``, 28680},
		{`{"$abs": "$s"}`, ``, 28765},
		{`{"$abs": "$nope"}`, `null`, 0},
		{`{"$ceil": 2.1}`, `3.0`, 0},
		{`{"$ceil": -2.1}`, `-2.0`, 0},
		{`{"$ceil": 5}`, `5`, 0},
		{`{"$floor": {"$numberDecimal": "-2.1"}}`, `{"$numberDecimal": "-3"}`, 0},
		{`{"$trunc": -2.7}`, `-2.0`, 0},
		{`{"$trunc": [2.789, 2]}`, `2.78`, 0},
		{`{"$trunc": [{"$numberLong": "1299"}, -2]}`, `{"$numberLong": "1200"}`, 0},
		{`{"$round": [2.675, 2]}`, `2.67`, 0},
		{`{"$round": [2.5]}`, `2.0`, 0},
		{`{"$round": [3.5]}`, `4.0`, 0},
		{`{"$round": [1250, -2]}`, `1200`, 0},
		{`{"$round": [1350, -2]}`, `1400`, 0},
		{`{"$round": [{"$numberDecimal": "1.2345"}, 3]}`, `{"$numberDecimal": "1.234"}`, 0},
		{`{"$round": [1, 101]}`, ``, 51083},
		{`{"$round": [1, 1.5]}`, ``, 51082},
		{`{"$round": [1, 2, 3]}`, ``, 16020},
		{`{"$round": "$s"}`, ``, 28765},
		{`{"$round": [null, 1]}`, `null`, 0},
	} {
		d := parseJSON(t, `{"e": `+tc.expr+`}`)
		e, err := expr.Parse(d.Lookup("e"))
		var got bsoncore.Value
		if err == nil {
			got, err = e.Eval(expr.NewContext(doc))
		}
		if tc.code != 0 {
			if mongoerr.CodeOf(err) != tc.code {
				t.Errorf("%s: err = %v, want code %d", tc.expr, err, tc.code)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		want := "missing"
		if tc.want != "missing" {
			want = canonical(t, parseJSON(t, `{"v": `+tc.want+`}`).Lookup("v"))
		}
		if g := canonical(t, got); g != want {
			t.Errorf("%s:\n got %s\nwant %s", tc.expr, g, want)
		}
	}
}

func TestOperatorTable(t *testing.T) {
	for _, op := range []string{"$add", "$eq", "$cond", "$literal", "$size", "$in", "$and"} {
		if !expr.IsOperator(op) {
			t.Errorf("%s is not registered", op)
		}
	}
	if expr.IsOperator("$nope") {
		t.Error("$nope is registered")
	}
	if dups := expr.DuplicateOperators(); len(dups) > 0 {
		t.Errorf("operators registered twice: %v", dups)
	}
}

func TestTruthy(t *testing.T) {
	doc := parseJSON(t, `{"a": [false, 0, {"$numberLong": "0"}, -0.0, {"$numberDecimal": "-0"}, null, {"$undefined": true},
		true, 1, "", [], {}, {"$numberDouble": "NaN"}, {"$date": "1970-01-01T00:00:00Z"}]}`)
	vals, _ := doc.Lookup("a").Array().Values()
	for i, v := range vals {
		if got, want := expr.Truthy(v), i >= 7; got != want {
			t.Errorf("Truthy(%s) = %v, want %v", v, got, want)
		}
	}
	if expr.Truthy(expr.Missing) {
		t.Error("Truthy(Missing) = true")
	}
}
