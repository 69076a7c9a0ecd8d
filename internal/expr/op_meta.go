package expr

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// TextScoreField is the trailing field in which a text plan carries a
// document's text score to the stages that read {$meta: "textScore"}
// (internal/planner's text plan; query.TextScoreField is the same name).
// No stored document can have it: field names cannot start with '$'.
const TextScoreField = "$cairnTextScore"

func init() { register("$meta", parseMeta) }

// parseMeta is {$meta: "textScore"}: the score of a $text query's
// document. Other metadata ("searchScore", "indexKey", …) is not kept by
// Cairn yet and is refused.
func parseMeta(arg bsoncore.Value, _ *Scope) (Expr, error) {
	name, ok := arg.StringValueOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.MetaUnsupported, "Unsupported argument to $meta: %s", arg)
	}
	switch name {
	case "textScore":
		return metaTextScore{}, nil
	case "randVal", "searchScore", "searchHighlights", "geoNearDistance", "geoNearPoint", "recordId", "indexKey", "sortKey", "searchScoreDetails", "searchSequenceToken", "score", "scoreDetails", "vectorSearchScore":
		return nil, mongoerr.New(mongoerr.BadValue, "$meta \"%s\" is not supported yet; Cairn supports textScore", name)
	}
	return nil, mongoerr.New(mongoerr.MetaUnsupported, "Unsupported argument to $meta: %s", name)
}

type metaTextScore struct{}

// Eval reads the score from the document the pipeline started from
// ($$ROOT): a text plan appended it there.
func (metaTextScore) Eval(ctx *Context) (bsoncore.Value, error) {
	if d, ok := ctx.root.DocumentOK(); ok {
		if v, err := d.LookupErr(TextScoreField); err == nil {
			return v, nil
		}
	}
	return Missing, mongoerr.New(mongoerr.TextScoreUnavailable, "query requires text score metadata, but it is not available")
}
