package engine

import (
	"math"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/storage"
)

// Pre-images for change streams: a collection whose options say
// changeStreamPreAndPostImages: {enabled: true} keeps, for every update,
// replacement and delete of one of its documents, the document as it was
// before, in config.system.preimages (where MongoDB keeps them), as a
// document {_id: {nsUUID, ts, applyOpsIndex}, operationTime, preImage}
// whose ts is the change's oplog entry's. It is written in the change's
// request ("Change and entry commit together" covers it too), so a change
// stream finds the pre-image of any change it reads, on every member.
// Writes to config.system.preimages are not logged themselves.
//
// RemoveExpiredPreImages removes, as MongoDB's expired pre-images remover
// does, the pre-images of changes older than the oldest oplog entry (no
// stream can read their changes any more) and, when the cluster parameter
// changeStreamOptions.preAndPostImages.expireAfterSeconds is set, those
// whose operationTime is that old (the commands layer runs it
// periodically, on the primary).

// PreImagesNS is where pre-images are kept.
var PreImagesNS = Namespace{DB: "config", Coll: "system.preimages"}

// PreImagesOn reports whether coll keeps pre-images for change streams.
func PreImagesOn(coll *catalog.Collection) bool {
	if coll == nil || len(coll.Options) == 0 {
		return false
	}
	on, _ := bsoncore.Document(coll.Options).Lookup("changeStreamPreAndPostImages", "enabled").BooleanOK()
	return on
}

// PreImageID is the _id of the pre-image of the change at ts (and index
// idx of its applyOps) to the collection with UUID ui.
func PreImageID(ui []byte, ts hlc.Timestamp, idx int64) bsoncore.Value {
	d := bsoncore.NewDocumentBuilder().AppendBinary("nsUUID", 4, ui).AppendTimestamp("ts", ts.T(), ts.I()).
		AppendInt64("applyOpsIndex", idx).Build()
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}
}

// storePreImage keeps cur as the pre-image of the change ns's request just
// logged (its entry's ts is the request's lastTS), when ns keeps them. In
// a transaction the change has no time yet: the pre-image waits for the
// commit, which writes it under the commit's time and the change's index
// in the applyOps entry (Txn.addPreImage), as the stream looks it up.
func (e *Engine) storePreImage(tx *storage.Txn, ns Namespace, cur bsoncore.Document) error {
	coll := e.writeCollection(ns)
	if !PreImagesOn(coll) || !logged(ns) {
		return nil
	}
	if t := e.txn.in; t != nil {
		t.addPreImage(tx, coll.UUID.Data, cur)
		return nil
	}
	return e.PutInTxn(tx, PreImagesNS, preImageDoc(coll.UUID.Data, e.oplog.lastTS, 0, cur, e.now()))
}

// preImageDoc is the config.system.preimages document of cur, the
// pre-image of change idx of the entry at ts.
func preImageDoc(ui []byte, ts hlc.Timestamp, idx int64, cur bsoncore.Document, now time.Time) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendValue("_id", PreImageID(ui, ts, idx)).
		AppendDateTime("operationTime", now.UnixMilli()).AppendDocument("preImage", cur).Build()
}

// RemoveExpiredPreImages deletes the pre-images whose change is older than
// the oldest oplog entry and, when expireAfter is positive, those whose
// operationTime is at or before now less expireAfter. It returns how many
// it deleted.
func (e *Engine) RemoveExpiredPreImages(now time.Time, expireAfter time.Duration) (int, error) {
	first, err := e.OplogFirst()
	if err != nil {
		return 0, err
	}
	cutoff := int64(math.MinInt64)
	if expireAfter > 0 {
		cutoff = now.Add(-expireAfter).UnixMilli()
	}
	return e.deleteScanned(PreImagesNS, nil, nil, func(doc bsoncore.Document) bool {
		t, i, _ := doc.Lookup("_id", "ts").TimestampOK()
		at, _ := doc.Lookup("operationTime").DateTimeOK()
		return first != 0 && hlc.New(t, i) < first || at <= cutoff
	})
}
