package expr_test

import "testing"

func TestStringOperators(t *testing.T) {
	checkOps(t, []opCase{
		{`{"$concat": ["a", "$s", "b"]}`, `"astrb"`, 0},
		{`{"$concat": []}`, `""`, 0},
		{`{"$concat": ["a", "$nope"]}`, `null`, 0},
		{`{"$concat": ["a", null]}`, `null`, 0},
		{`{"$concat": ["a", 1]}`, ``, 16702},
		{`{"$toLower": "ABC déF"}`, `"abc déf"`, 0},
		{`{"$toUpper": "$s"}`, `"STR"`, 0},
		{`{"$toUpper": "$nope"}`, `""`, 0},
		{`{"$toUpper": 12}`, `"12"`, 0},
		{`{"$toLower": [1, 2]}`, ``, 16020},
		{`{"$toLower": {"$literal": [1]}}`, ``, 16007},
		{`{"$strLenCP": "cafétéria"}`, `9`, 0},
		{`{"$strLenCP": ""}`, `0`, 0},
		{`{"$strLenCP": "$nope"}`, ``, 34471},
		{`{"$substrCP": ["cafétéria", 0, 5]}`, `"cafét"`, 0},
		{`{"$substrCP": ["cafétéria", 5, 4]}`, `"éria"`, 0},
		{`{"$substrCP": ["abc", 1, 100]}`, `"bc"`, 0},
		{`{"$substrCP": ["abc", 5, 1]}`, `""`, 0},
		{`{"$substrCP": [null, 0, 1]}`, `""`, 0},
		{`{"$substrCP": ["abc", "0", 1]}`, ``, 34450},
		{`{"$substrCP": ["abc", 0.5, 1]}`, ``, 34451},
		{`{"$substrCP": ["abc", 0, "1"]}`, ``, 34452},
		{`{"$substrCP": ["abc", 0, -1]}`, ``, 34454},
		{`{"$substrCP": ["abc", -1, 1]}`, ``, 34455},
		{`{"$substrCP": ["abc", 0]}`, ``, 16020},
		{`{"$split": ["June-15-2013", "-"]}`, `["June", "15", "2013"]`, 0},
		{`{"$split": ["banana split", "a"]}`, `["b", "n", "n", " split"]`, 0},
		{`{"$split": ["headphone jack", 7]}`, ``, 40086},
		{`{"$split": ["abc", ""]}`, ``, 40087},
		{`{"$split": [1, "a"]}`, ``, 40085},
		{`{"$split": ["$nope", "a"]}`, `null`, 0},
	})
}
