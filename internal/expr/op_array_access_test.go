package expr_test

import "testing"

func TestArrayAccessOperators(t *testing.T) {
	checkOps(t, []opCase{
		{`{"$arrayElemAt": [[1, 2, 3], 0]}`, `1`, 0},
		{`{"$arrayElemAt": [[1, 2, 3], -1]}`, `3`, 0},
		{`{"$arrayElemAt": [[1, 2, 3], 15]}`, `missing`, 0},
		{`{"$arrayElemAt": [[1, 2, 3], -4]}`, `missing`, 0},
		{`{"$arrayElemAt": ["$nope", 0]}`, `null`, 0},
		{`{"$arrayElemAt": ["$s", 0]}`, ``, 28689},
		{`{"$arrayElemAt": [[1], "0"]}`, ``, 28690},
		{`{"$arrayElemAt": [[1], 0.5]}`, ``, 28691},
		{`{"$arrayElemAt": [[1], 0.0]}`, `1`, 0},
		{`{"$first": [[1, 2, 3]]}`, `1`, 0},
		{`{"$last": [[1, 2, 3]]}`, `3`, 0},
		{`{"$first": "$empty"}`, `missing`, 0},
		{`{"$first": "$nope"}`, `null`, 0},
		{`{"$last": "$s"}`, ``, 28689},
		{`{"$slice": [[1, 2, 3], 1, 1]}`, `[2]`, 0},
		{`{"$slice": [[1, 2, 3], -2]}`, `[2, 3]`, 0},
		{`{"$slice": [[1, 2, 3], 15, 2]}`, `[]`, 0},
		{`{"$slice": [[1, 2, 3], -15, 2]}`, `[1, 2]`, 0},
		{`{"$slice": [[1, 2, 3], 2]}`, `[1, 2]`, 0},
		{`{"$slice": [[1, 2, 3], -5]}`, `[1, 2, 3]`, 0},
		{`{"$slice": ["$nope", 1]}`, `null`, 0},
		{`{"$slice": ["$s", 1]}`, ``, 28724},
		{`{"$slice": [[1], "1"]}`, ``, 28725},
		{`{"$slice": [[1], 1.5]}`, ``, 28726},
		{`{"$slice": [[1], 0, "1"]}`, ``, 28727},
		{`{"$slice": [[1], 0, 0]}`, ``, 28729},
		{`{"$slice": [[1]]}`, ``, 28667},
		{`{"$concatArrays": [["hello", " "], ["world"]]}`, `["hello", " ", "world"]`, 0},
		{`{"$concatArrays": [[1], [[2]], []]}`, `[1, [2]]`, 0},
		{`{"$concatArrays": [[1], "$nope"]}`, `null`, 0},
		{`{"$concatArrays": [[1], 2]}`, ``, 28664},
	})
}
