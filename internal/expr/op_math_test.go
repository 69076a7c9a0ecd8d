package expr_test

import "testing"

func TestMathOperators(t *testing.T) {
	checkOps(t, []opCase{
		{`{"$exp": 0}`, `1.0`, 0},
		{`{"$exp": 1}`, `2.718281828459045`, 0},
		{`{"$exp": {"$numberDecimal": "0"}}`, `{"$numberDecimal": "1"}`, 0},
		{`{"$exp": {"$numberDecimal": "1"}}`, `{"$numberDecimal": "2.718281828459045235360287471352662"}`, 0},
		{`{"$exp": "$nope"}`, `null`, 0},
		{`{"$exp": "$s"}`, ``, 28765},
		{`{"$ln": 1}`, `0.0`, 0},
		{`{"$ln": {"$numberDecimal": "10"}}`, `{"$numberDecimal": "2.302585092994045684017991454684364"}`, 0},
		{`{"$ln": 0}`, ``, 28766},
		{`{"$ln": -1}`, ``, 28766},
		{`{"$ln": {"$numberDouble": "NaN"}}`, `{"$numberDouble": "NaN"}`, 0},
		{`{"$log10": 1000}`, `3.0`, 0},
		{`{"$log10": 0.1}`, `-1.0`, 0},
		{`{"$log10": {"$numberDecimal": "1000"}}`, `{"$numberDecimal": "3"}`, 0},
		{`{"$log10": 0}`, ``, 28761},
		{`{"$log": [100, 10]}`, `2.0`, 0},
		{`{"$log": [8, 2]}`, `3.0`, 0},
		{`{"$log": [null, 2]}`, `null`, 0},
		{`{"$log": ["a", 2]}`, ``, 28756},
		{`{"$log": [2, "a"]}`, ``, 28757},
		{`{"$log": [-2, 2]}`, ``, 28758},
		{`{"$log": [2, 1]}`, ``, 28759},
		{`{"$log": [2, 0]}`, ``, 28759},
		{`{"$log": [2]}`, ``, 16020},
		{`{"$sqrt": 25}`, `5.0`, 0},
		{`{"$sqrt": {"$numberDecimal": "4"}}`, `{"$numberDecimal": "2"}`, 0},
		{`{"$sqrt": {"$numberDecimal": "2"}}`, `{"$numberDecimal": "1.414213562373095048801688724209698"}`, 0},
		{`{"$sqrt": {"$numberDecimal": "0.25"}}`, `{"$numberDecimal": "0.5"}`, 0},
		{`{"$sqrt": -1}`, ``, 28714},
		{`{"$sqrt": {"$numberDecimal": "-1"}}`, ``, 28714},
		{`{"$pow": [2, 10]}`, `1024`, 0},
		{`{"$pow": [2, 31]}`, `{"$numberLong": "2147483648"}`, 0},
		{`{"$pow": [2, 63]}`, `9.223372036854775808E+18`, 0},
		{`{"$pow": [{"$numberLong": "3"}, 2]}`, `{"$numberLong": "9"}`, 0},
		{`{"$pow": [2, -1]}`, `0.5`, 0},
		{`{"$pow": [-1, -3]}`, `-1`, 0},
		{`{"$pow": [4, 0.5]}`, `2.0`, 0},
		{`{"$pow": [{"$numberDecimal": "2"}, 10]}`, `{"$numberDecimal": "1024"}`, 0},
		{`{"$pow": [{"$numberDecimal": "4"}, {"$numberDecimal": "0.5"}]}`, `{"$numberDecimal": "2"}`, 0},
		{`{"$pow": [0, -1]}`, ``, 28764},
		{`{"$pow": ["a", 1]}`, ``, 28762},
		{`{"$pow": [1, "a"]}`, ``, 28763},
		{`{"$pow": [1, null]}`, `null`, 0},
		{`{"$type": {"$rand": {}}}`, `"double"`, 0},
		{`{"$lt": [{"$rand": {}}, 1]}`, `true`, 0},
		{`{"$rand": {"a": 1}}`, ``, 3040501},
		{`{"$rand": 1}`, ``, 10065},
	})
}

// Extreme decimals over- and underflow instead of failing.
func TestDecimalMathExtremes(t *testing.T) {
	checkOps(t, []opCase{
		{`{"$exp": {"$numberDecimal": "100000"}}`, `{"$numberDecimal": "Infinity"}`, 0},
		{`{"$exp": {"$numberDecimal": "-100000"}}`, `{"$numberDecimal": "0"}`, 0},
		{`{"$pow": [{"$numberDecimal": "1E+6000"}, 10000]}`, `{"$numberDecimal": "Infinity"}`, 0},
		{`{"$pow": [{"$numberDecimal": "1E-6000"}, 10000]}`, `{"$numberDecimal": "0E-6176"}`, 0},
		{`{"$pow": [{"$numberDecimal": "-2"}, {"$numberDecimal": "0.5"}]}`, `{"$numberDecimal": "NaN"}`, 0},
		{`{"$pow": [{"$numberDecimal": "-2"}, 3]}`, `{"$numberDecimal": "-8"}`, 0},
		{`{"$pow": [{"$numberDecimal": "10"}, {"$numberDecimal": "1E+100"}]}`, `{"$numberDecimal": "Infinity"}`, 0},
		{`{"$sqrt": {"$numberDecimal": "Infinity"}}`, `{"$numberDecimal": "Infinity"}`, 0},
		{`{"$ln": {"$numberDecimal": "1E-6000"}}`, `{"$numberDecimal": "-13815.51055796427410410794872810619"}`, 0},
	})
}
