package agg

import (
	"strings"

	"github.com/cairndb/cairn/internal/expr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func init() { registerStage("$count", parseCount) }

// countStage is $count: one document {<name>: n} holding the number of
// input documents as an int32 (an int64 past 2^31), or nothing for an
// empty input, as MongoDB's $group+$project expansion gives.
type countStage struct{ name string }

func parseCount(arg bsoncore.Value, _ *parseContext) (stage, error) {
	s, ok := arg.StringValueOK()
	switch {
	case !ok:
		return nil, errorf(codeCountNotString, "the count field must be a non-empty string")
	case s == "":
		return nil, errorf(codeCountEmpty, "the count field must be a non-empty string")
	case s[0] == '$':
		return nil, errorf(codeCountDollar, "the count field cannot be a $-prefixed path")
	case strings.IndexByte(s, 0) >= 0:
		return nil, errorf(codeCountNull, "the count field cannot contain a null byte")
	case strings.Contains(s, "."):
		return nil, errorf(codeCountDot, "the count field cannot contain '.'")
	}
	return &countStage{s}, nil
}

func (c *countStage) open(_ *runContext, in Source) (Source, error) {
	done := false
	return &funcSource{in: in, next: func() (bsoncore.Document, error) {
		if done {
			return nil, nil
		}
		done = true
		var n int64
		for {
			d, err := in.Next()
			if err != nil {
				return nil, err
			}
			if d == nil {
				break
			}
			n++
		}
		if n == 0 {
			return nil, nil
		}
		return buildDoc([]field{{c.name, expr.IntOrLong(n)}}), nil
	}}, nil
}
