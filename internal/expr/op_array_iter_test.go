package expr_test

import "testing"

func TestArrayIterOperators(t *testing.T) {
	checkOps(t, []opCase{
		{`{"$filter": {"input": [1, 5, 2, 7], "cond": {"$gt": ["$$this", 2]}}}`, `[5, 7]`, 0},
		{`{"$filter": {"input": [1, 5, 2, 7], "as": "x", "cond": {"$lt": ["$$x", 6]}}}`, `[1, 5, 2]`, 0},
		{`{"$filter": {"input": [1, 5, 2, 7], "cond": true, "limit": 2}}`, `[1, 5]`, 0},
		{`{"$filter": {"input": "$nope", "cond": true}}`, `null`, 0},
		{`{"$filter": {"input": "$s", "cond": true}}`, ``, 28651},
		{`{"$filter": [1]}`, ``, 28646},
		{`{"$filter": {"input": [1], "cond": true, "x": 1}}`, ``, 28647},
		{`{"$filter": {"cond": true}}`, ``, 28648},
		{`{"$filter": {"input": [1]}}`, ``, 28650},
		{`{"$filter": {"input": [1], "as": "x", "cond": "$$this"}}`, ``, 17276},
		{`{"$map": {"input": [1, 2, 3], "in": {"$add": ["$$this", "$i"]}}}`, `[8, 9, 10]`, 0},
		{`{"$map": {"input": "$arr", "as": "e", "in": {"$type": "$$e"}}}`, `["object", "object", "int", "array", "object"]`, 0},
		{`{"$map": {"input": [[1, 2], [3]], "as": "o", "in": {"$map": {"input": "$$o", "as": "i", "in": {"$multiply": ["$$i", 10]}}}}}`, `[[10, 20], [30]]`, 0},
		{`{"$map": {"input": [1, 2], "as": "v", "in": {"$map": {"input": [10], "as": "v", "in": "$$v"}}}}`, `[[10], [10]]`, 0},
		{`{"$map": {"input": "$nope", "in": 1}}`, `null`, 0},
		{`{"$map": {"input": 1, "in": 1}}`, ``, 16883},
		{`{"$map": 1}`, ``, 16878},
		{`{"$map": {"input": [1], "in": 1, "x": 1}}`, ``, 16879},
		{`{"$map": {"in": 1}}`, ``, 16880},
		{`{"$map": {"input": [1]}}`, ``, 16882},
		{`{"$map": {"input": [1], "as": "Bad", "in": 1}}`, ``, 16867},
		{`{"$map": {"input": [1], "as": "a-b", "in": 1}}`, ``, 16868},
	})
}
