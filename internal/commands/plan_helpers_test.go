package commands

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
)

// plannedIndexes plans a find of filter on ns and lists the indexes the
// winning plan scans, joined by ","; "" means a collection scan.
func plannedIndexes(eng *engine.Engine, ns engine.Namespace, filter bsoncore.Document) (string, error) {
	sp, err := newSelection(ns, filter)
	if err != nil {
		return "", err
	}
	ex, err := sp.prepare(eng, false)
	if err != nil {
		return "", err
	}
	defer ex.Close()
	return strings.Join(ex.IndexesUsed(), ","), nil
}
