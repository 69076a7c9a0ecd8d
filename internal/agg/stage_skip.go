package agg

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

func init() { registerStage("$skip", parseSkip) }

// skipStage is $skip: all but the first n documents.
type skipStage struct{ n int64 }

func parseSkip(arg bsoncore.Value, _ *parseContext) (stage, error) {
	n, why := nonNegativeLong(arg)
	if why != "" {
		return nil, errorf(codeSkipArg, "invalid argument to $skip stage: %s", why)
	}
	return &skipStage{n}, nil
}

func (s *skipStage) open(_ *runContext, in Source) (Source, error) {
	skipped := int64(0)
	return &funcSource{in: in, next: func() (bsoncore.Document, error) {
		for skipped < s.n {
			d, err := in.Next()
			if d == nil || err != nil {
				return nil, err
			}
			skipped++
		}
		return in.Next()
	}}, nil
}
