package commands

import (
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/agg"
)

// Cursor replies: {cursor: {firstBatch|nextBatch: [...], id, ns}, ok: 1}.

// DefaultFirstBatch is how many documents find returns before getMore when
// the client sets no batchSize, as in MongoDB.
const DefaultFirstBatch = 101

// maxBatchBytes caps a batch's documents so the reply stays under the 16 MiB
// BSON limit with room for the envelope.
const maxBatchBytes = MaxBSONObjectSize - 16*1024

// cursorReply answers with every doc in one batch and no cursor to follow.
func cursorReply(dst []byte, ns string, id int64, docs []bsoncore.Document) bsoncore.Document {
	r := NewReply(dst)
	var cidx, aidx int32
	buf := r.Raw()
	cidx, *buf = bsoncore.AppendDocumentElementStart(*buf, "cursor")
	aidx, *buf = bsoncore.AppendArrayElementStart(*buf, "firstBatch")
	for i, d := range docs {
		*buf = bsoncore.AppendDocumentElement(*buf, strconv.Itoa(i), d)
	}
	*buf, _ = bsoncore.AppendArrayEnd(*buf, aidx)
	*buf = bsoncore.AppendInt64Element(*buf, "id", id)
	*buf = bsoncore.AppendStringElement(*buf, "ns", ns)
	*buf, _ = bsoncore.AppendDocumentEnd(*buf, cidx)
	return r.Finish()
}

// fillBatch appends up to limit documents from src (plus a held one first)
// into a batch array named field; it stops early at the byte cap. It returns
// the reply, a document read but not sent (held), and whether src is done.
func fillBatch(dst []byte, ns, field string, held bsoncore.Document, src agg.Source, limit int64) (r *Reply, kept bsoncore.Document, done bool, err error) {
	r = NewReply(dst)
	buf := r.Raw()
	var cidx, aidx int32
	cidx, *buf = bsoncore.AppendDocumentElementStart(*buf, "cursor")
	aidx, *buf = bsoncore.AppendArrayElementStart(*buf, field)
	n, bytes := int64(0), 0
	var key [20]byte
	add := func(d bsoncore.Document) bool {
		if n > 0 && bytes+len(d) > maxBatchBytes {
			return false
		}
		*buf = bsoncore.AppendDocumentElement(*buf, string(strconv.AppendInt(key[:0], n, 10)), d)
		n++
		bytes += len(d)
		return true
	}
	if held != nil {
		add(held)
	}
	for limit <= 0 || n < limit {
		d, err := src.Next()
		if err != nil {
			return nil, nil, true, err
		}
		if d == nil {
			done = true
			break
		}
		if !add(d) {
			kept = append(bsoncore.Document(nil), d...)
			break
		}
	}
	*buf, _ = bsoncore.AppendArrayEnd(*buf, aidx)
	r.cursorIdx = cidx
	return r, kept, done, nil
}

// finishCursor closes the cursor sub-document begun by fillBatch.
func finishCursor(r *Reply, id int64, ns string) bsoncore.Document {
	buf := r.Raw()
	*buf = bsoncore.AppendInt64Element(*buf, "id", id)
	*buf = bsoncore.AppendStringElement(*buf, "ns", ns)
	*buf, _ = bsoncore.AppendDocumentEnd(*buf, r.cursorIdx)
	return r.Finish()
}
