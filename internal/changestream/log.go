package changestream

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/hlc"
)

// EngineLog is the Log of an engine.
func EngineLog(e *engine.Engine) Log { return engineLog{e} }

type engineLog struct{ e *engine.Engine }

func (l engineLog) ReadOplog(after hlc.Timestamp, fn func(hlc.Timestamp, bsoncore.Document) bool) (hlc.Timestamp, error) {
	return l.e.ReadOplog(after, fn)
}

// tapOplog makes the engine hand a Feed each replicated group's entries
// (a replica set member's; a standalone's commits are not tapped, and its
// Feed reads them back).
func (l engineLog) tapOplog(fn func(prev, now hlc.Timestamp, entries func(func(hlc.Timestamp, bsoncore.Document)))) {
	l.e.TapOplog(fn)
}

func (l engineLog) OplogFirst() (hlc.Timestamp, error) { return l.e.OplogFirst() }
func (l engineLog) OplogTrimmed() hlc.Timestamp        { return l.e.OplogTrimmed() }
func (l engineLog) LastCommitted() hlc.Timestamp       { return l.e.Storage().LastCommitted() }

func (l engineLog) Lookup(db, coll string, id bsoncore.Value) (bsoncore.Document, bool, error) {
	doc, found, err := l.e.Get(nil, engine.Namespace{DB: db, Coll: coll}, id)
	return doc, found, err
}

// PreImage reads the change's pre-image from config.system.preimages
// (engine's storePreImage), absent when its collection did not keep them.
func (l engineLog) PreImage(_, _ string, ui []byte, ts hlc.Timestamp, idx int32) (bsoncore.Document, bool, error) {
	if ui == nil {
		return nil, false, nil
	}
	doc, found, err := l.e.Get(nil, engine.PreImagesNS, engine.PreImageID(ui, ts, int64(idx)))
	if err != nil || !found {
		return nil, false, err
	}
	pre, ok := bsoncore.Document(doc).Lookup("preImage").DocumentOK()
	return pre, ok, nil
}
