package agg

import (
	"github.com/cairndb/cairn/internal/mongoerr"
	"math"
	"sort"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/expr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Granularities of $bucketAuto: rounding bucket boundaries to preferred
// number series (Renard R5…R80, 1-2-5, E6…E192: the "least rounded"
// series MongoDB uses, scaled by powers of ten) or to powers of two.
// roundUp gives the smallest series value strictly greater than the value,
// roundDown the largest strictly smaller one; 0 stays 0. Series results
// are doubles (a decimal128 value is rounded as a double: a deviation);
// POWERSOF2 results are integers for non-negative exponents, as MongoDB's
// $pow(2, exp) gives.

var preferredSeries = map[string][]float64{
	"R5":    {10, 16, 25, 40, 63},
	"R10":   {100, 125, 160, 200, 250, 315, 400, 500, 630, 800},
	"R20":   {100, 112, 125, 140, 160, 180, 200, 224, 250, 280, 315, 355, 400, 450, 500, 560, 630, 710, 800, 900},
	"R40":   {100, 106, 112, 118, 125, 132, 140, 150, 160, 170, 180, 190, 200, 212, 224, 236, 250, 265, 280, 300, 315, 355, 375, 400, 425, 450, 475, 500, 530, 560, 600, 630, 670, 710, 750, 800, 850, 900, 950},
	"R80":   {103, 109, 115, 122, 128, 136, 145, 155, 165, 175, 185, 195, 206, 218, 230, 243, 258, 272, 290, 307, 325, 345, 365, 387, 412, 437, 462, 487, 515, 545, 575, 615, 650, 690, 730, 775, 825, 875, 925, 975},
	"1-2-5": {10, 20, 50},
	"E6":    {10, 15, 22, 33, 47, 68},
	"E12":   {10, 12, 15, 18, 22, 27, 33, 39, 47, 56, 68, 82},
	"E24":   {10, 11, 12, 13, 15, 16, 18, 20, 22, 24, 27, 30, 33, 36, 39, 43, 47, 51, 56, 62, 68, 75, 82, 91},
	"E48":   {100, 105, 110, 115, 121, 127, 133, 140, 147, 154, 162, 169, 178, 187, 196, 205, 215, 226, 237, 249, 261, 274, 287, 301, 316, 332, 348, 365, 383, 402, 422, 442, 464, 487, 511, 536, 562, 590, 619, 649, 681, 715, 750, 787, 825, 866, 909, 953},
	"E96": {100, 102, 105, 107, 110, 113, 115, 118, 121, 124, 127, 130, 133, 137, 140, 143, 147, 150, 154, 158, 162, 165, 169, 174, 178, 182, 187, 191,
		196, 200, 205, 210, 215, 221, 226, 232, 237, 243, 249, 255, 261, 267, 274, 280, 287, 294, 301, 309, 316, 324, 332, 340, 348, 357, 365, 374,
		383, 392, 402, 412, 422, 432, 442, 453, 464, 475, 487, 499, 511, 523, 536, 549, 562, 576, 590, 604, 619, 634, 649, 665, 681, 698, 715, 732,
		750, 768, 787, 806, 825, 845, 866, 887, 909, 931, 953, 976},
	"E192": {100, 101, 102, 104, 105, 106, 107, 109, 110, 111, 113, 114, 115, 117, 118, 120, 121, 123,
		124, 126, 127, 129, 130, 132, 133, 135, 137, 138, 140, 142, 143, 145, 147, 149, 150, 152,
		154, 156, 158, 160, 162, 164, 165, 167, 169, 172, 174, 176, 178, 180, 182, 184, 187, 189,
		191, 193, 196, 198, 200, 203, 205, 208, 210, 213, 215, 218, 221, 223, 226, 229, 232, 234,
		237, 240, 243, 246, 249, 252, 255, 258, 261, 264, 267, 271, 274, 277, 280, 284, 287, 291,
		294, 298, 301, 305, 309, 312, 316, 320, 324, 328, 332, 336, 340, 344, 348, 352, 357, 361,
		365, 370, 374, 379, 383, 388, 392, 397, 402, 407, 412, 417, 422, 427, 432, 437, 442, 448,
		453, 459, 464, 470, 475, 481, 487, 493, 499, 505, 511, 517, 523, 530, 536, 542, 549, 556,
		562, 569, 576, 583, 590, 597, 604, 612, 619, 626, 634, 642, 649, 657, 665, 673, 681, 690,
		698, 706, 715, 723, 732, 741, 750, 759, 768, 777, 787, 796, 806, 816, 825, 835, 845, 856,
		866, 876, 887, 898, 909, 920, 931, 942, 953, 965, 976, 988},
}

// MongoDB's codes for values a rounder cannot round.
const (
	codeRoundNotNumber = mongoerr.RoundNotNumber
	codeRoundNaN       = mongoerr.RoundNaN
	codeRoundNegative  = mongoerr.RoundNegative
)

// rounder rounds bucket boundaries.
type rounder interface {
	roundUp(v bsoncore.Value) (bsoncore.Value, error)
	roundDown(v bsoncore.Value) (bsoncore.Value, error)
}

// newRounder returns the rounder of a granularity name, or nil.
func newRounder(name string) rounder {
	if name == "POWERSOF2" {
		return powersOf2{}
	}
	if s, ok := preferredSeries[name]; ok {
		return seriesRounder(s)
	}
	return nil
}

// roundable checks v as MongoDB's uassertNonNegativeNumber and returns it
// as a double.
func roundable(v bsoncore.Value) (float64, error) {
	if !isNumber(v) {
		return 0, errorf(codeRoundNotNumber, "A granularity rounder can only round numeric values, but found type: %s", typeName(v))
	}
	f, _ := bsonx.AsFloat64(v)
	if math.IsNaN(f) {
		return 0, errorf(codeRoundNaN, "A granularity rounder cannot round NaN")
	}
	if f < 0 {
		return 0, errorf(codeRoundNegative, "A granularity rounder can only round non-negative numbers")
	}
	return f, nil
}

type seriesRounder []float64

func (s seriesRounder) roundUp(v bsoncore.Value) (bsoncore.Value, error) {
	x, err := roundable(v)
	if err != nil || x == 0 || math.IsInf(x, 1) {
		return v, err
	}
	m := 1.0
	for x >= s[len(s)-1]*m {
		m *= 10
	}
	for x < s[0]*m {
		prevMin := s[0] * m
		m /= 10
		if x >= s[len(s)-1]*m {
			return expr.Double(prevMin), nil
		}
	}
	i := sort.Search(len(s), func(i int) bool { return x < s[i]*m })
	return expr.Double(s[i] * m), nil
}

func (s seriesRounder) roundDown(v bsoncore.Value) (bsoncore.Value, error) {
	x, err := roundable(v)
	if err != nil || x == 0 {
		return v, err
	}
	m := 1.0
	for x <= s[0]*m {
		m /= 10
	}
	for x > s[len(s)-1]*m {
		prevMax := s[len(s)-1] * m
		m *= 10
		if x <= s[0]*m {
			return expr.Double(prevMax), nil
		}
	}
	i := sort.Search(len(s), func(i int) bool { return !(s[i]*m < x) })
	return expr.Double(s[i-1] * m), nil
}

type powersOf2 struct{}

func (powersOf2) roundUp(v bsoncore.Value) (bsoncore.Value, error) {
	x, err := roundable(v)
	if err != nil || x == 0 {
		return v, err
	}
	return pow2(int(math.Floor(math.Log2(x))) + 1), nil
}

func (powersOf2) roundDown(v bsoncore.Value) (bsoncore.Value, error) {
	x, err := roundable(v)
	if err != nil || x == 0 {
		return v, err
	}
	return pow2(int(math.Ceil(math.Log2(x))) - 1), nil
}

// pow2 is $pow(2, exp): an int32 or int64 while it fits, else a double.
func pow2(exp int) bsoncore.Value {
	switch {
	case exp >= 0 && exp < 31:
		return expr.Int32(1 << exp)
	case exp >= 0 && exp < 63:
		return expr.Int64(1 << exp)
	}
	return expr.Double(math.Pow(2, float64(exp)))
}
