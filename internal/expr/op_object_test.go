package expr_test

import "testing"

func TestObjectOperators(t *testing.T) {
	checkOps(t, []opCase{
		{`{"$mergeObjects": [{"a": 1, "b": 1}, {"b": 2, "c": 3}]}`, `{"a": 1, "b": 2, "c": 3}`, 0},
		{`{"$mergeObjects": [{"a": 1}, null, "$nope"]}`, `{"a": 1}`, 0},
		{`{"$mergeObjects": "$sub"}`, `{"b": {"c": 8}}`, 0},
		{`{"$mergeObjects": []}`, `{}`, 0},
		{`{"$mergeObjects": [{"a": 1}, 5]}`, ``, 40400},
	})
}
