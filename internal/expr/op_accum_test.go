package expr_test

import "testing"

func TestAccumulatorExpressions(t *testing.T) {
	checkOps(t, []opCase{
		{`{"$sum": [[10, 5, 10]]}`, `25`, 0},
		{`{"$sum": "$arr.b"}`, `1`, 0},
		{`{"$sum": [1, 2.5, "x", null]}`, `3.5`, 0},
		{`{"$sum": ["$maxi", 1]}`, `{"$numberLong": "2147483648"}`, 0},
		{`{"$sum": "$nope"}`, `0`, 0},
		{`{"$sum": [[1, 2], 3]}`, `3`, 0},
		{`{"$sum": ["$dec", 1]}`, `{"$numberDecimal": "2.10"}`, 0},
		{`{"$avg": [[10, 5, 10, 3]]}`, `7.0`, 0},
		{`{"$avg": [1, 2]}`, `1.5`, 0},
		{`{"$avg": "$nope"}`, `null`, 0},
		{`{"$avg": [["a"]]}`, `null`, 0},
		{`{"$min": [[4, 2, null, 8]]}`, `2`, 0},
		{`{"$max": [4, "a", 8]}`, `"a"`, 0},
		{`{"$max": [[]]}`, `null`, 0},
		{`{"$min": "$nope"}`, `null`, 0},
		{`{"$max": [[1, 5], [2]]}`, `[2]`, 0},
	})
}
