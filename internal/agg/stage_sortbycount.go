package agg

import (
	"strings"

	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/query"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func init() { registerStage("$sortByCount", parseSortByCount) }

// sortByCountStage is $sortByCount <expr>: MongoDB's expansion
// {$group: {_id: <expr>, count: {$sum: 1}}}, {$sort: {count: -1}}. Equal
// counts keep the groups' first-arrival order.
type sortByCountStage struct {
	group *groupStage
	sort  *query.Sort
}

var countDesc = func() *query.Sort {
	s, _ := query.ParseSort(bsoncore.NewDocumentBuilder().AppendInt32("count", -1).Build())
	return s
}()

func parseSortByCount(arg bsoncore.Value, pc *parseContext) (stage, error) {
	switch arg.Type {
	case bsoncore.TypeString:
		if !strings.HasPrefix(arg.StringValue(), "$") {
			return nil, errorf(codeSortByCountPath, "the sortByCount field must be defined as a $-prefixed path or an expression")
		}
	case bsoncore.TypeEmbeddedDocument:
		fs := fieldsOf(arg)
		if len(fs) == 0 || !strings.HasPrefix(fs[0].Name, "$") {
			return nil, errorf(codeSortByCountObject, "the sortByCount field must be defined as a $-prefixed path or an expression")
		}
	default:
		return nil, errorf(codeSortByCountType, "the sortByCount field must be specified as a string or as an object")
	}
	id, err := expr.ParseIn(arg, pc.scope)
	if err != nil {
		return nil, err
	}
	g := &groupStage{id: id, name: "$sortByCount", accs: []accSpec{{
		name: "count", op: "$sum", kind: accumulators["$sum"], arg: constExpr(expr.Int32(1)),
	}}}
	return &sortByCountStage{group: g, sort: countDesc}, nil
}

func (s *sortByCountStage) open(rc *runContext, in Source) (Source, error) {
	g, err := s.group.open(rc, in)
	if err != nil {
		return nil, err
	}
	return sortSource(rc, s.sort, 0, g), nil
}
