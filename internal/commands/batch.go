package commands

import (
	"encoding/binary"
	"strconv"
	"strings"

	"github.com/cairndb/cairn/internal/mongoerr"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/engine"
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
// into a batch array named field; it stops early at the byte cap. limit 0
// means no limit and a negative limit an empty batch (batchSize: 0, which
// opens the cursor without reading). A full batch reads one document ahead,
// so that done is true as soon as the last document is in a batch. It
// returns the reply, a document read but not sent (held), and whether src
// is done.
func fillBatch(dst []byte, ns, field string, held bsoncore.Document, src agg.Source, limit int64) (r *Reply, kept bsoncore.Document, done bool, err error) {
	var b batchWriter
	b.start(dst, field)
	if held != nil {
		b.add(held)
	}
	for limit == 0 || b.n < limit {
		d, err := src.Next()
		if err != nil {
			return nil, nil, true, err
		}
		if d == nil {
			done = true
			break
		}
		if !b.add(d) {
			kept = append(bsoncore.Document(nil), d...)
			break
		}
	}
	if !done && kept == nil && limit > 0 {
		// The batch is full: read one more, so that a batch ending with the
		// last document closes the cursor (id 0) instead of leaving one
		// whose getMore returns nothing. The document read is held for the
		// next batch.
		d, err := src.Next()
		if err != nil {
			return nil, nil, true, err
		}
		if d == nil {
			done = true
		} else {
			kept = append(bsoncore.Document(nil), d...)
		}
	}
	return b.end(), kept, done, nil
}

// batchWriter writes a cursor reply's batch array: {cursor: {field: [...]
// (the caller adds the cursor's other fields and finishCursor closes it).
type batchWriter struct {
	r          *Reply
	buf        *[]byte
	cidx, aidx int32
	n          int64
	bytes      int
	key        [20]byte
}

func (b *batchWriter) start(dst []byte, field string) {
	b.r = NewReply(dst)
	b.buf = b.r.Raw()
	b.cidx, *b.buf = bsoncore.AppendDocumentElementStart(*b.buf, "cursor")
	b.aidx, *b.buf = bsoncore.AppendArrayElementStart(*b.buf, field)
}

// add appends d unless the batch holds documents already and d would take
// it past the byte cap.
func (b *batchWriter) add(d bsoncore.Document) bool {
	if b.n > 0 && b.bytes+len(d) > maxBatchBytes {
		return false
	}
	*b.buf = bsoncore.AppendDocumentElement(*b.buf, string(strconv.AppendInt(b.key[:0], b.n, 10)), d)
	b.n++
	b.bytes += len(d)
	return true
}

// end closes the batch array; the reply's cursor document stays open.
func (b *batchWriter) end() *Reply {
	*b.buf, _ = bsoncore.AppendArrayEnd(*b.buf, b.aidx)
	b.r.cursorIdx = b.cidx
	b.r.batchN = b.n
	return b.r
}

// finishCursor closes the cursor sub-document begun by fillBatch.
func finishCursor(r *Reply, id int64, ns string) bsoncore.Document {
	buf := r.Raw()
	*buf = bsoncore.AppendInt64Element(*buf, "id", id)
	*buf = bsoncore.AppendStringElement(*buf, "ns", ns)
	if at := r.atClusterTime; at != 0 {
		*buf = bsoncore.AppendTimestampElement(*buf, "atClusterTime", at.T(), at.I())
	}
	*buf, _ = bsoncore.AppendDocumentEnd(*buf, r.cursorIdx)
	return r.Finish()
}

// finishCursorIn is finishCursor with the namespace as its two names,
// written into the reply as one "db.coll" string without building it.
func finishCursorIn(r *Reply, id int64, ns engine.Namespace) bsoncore.Document {
	buf := r.Raw()
	*buf = bsoncore.AppendInt64Element(*buf, "id", id)
	*buf = append(*buf, byte(bsoncore.TypeString), 'n', 's', 0)
	*buf = binary.LittleEndian.AppendUint32(*buf, uint32(len(ns.DB)+1+len(ns.Coll)+1))
	*buf = append(append(append(append(*buf, ns.DB...), '.'), ns.Coll...), 0)
	if at := r.atClusterTime; at != 0 {
		*buf = bsoncore.AppendTimestampElement(*buf, "atClusterTime", at.T(), at.I())
	}
	*buf, _ = bsoncore.AppendDocumentEnd(*buf, r.cursorIdx)
	return r.Finish()
}

// listCursor answers a listing command (listCollections, listIndexes) with
// docs as a cursor whose first batch honours the command's
// cursor.batchSize; the rest is left for getMore.
func listCursor(s *Session, req *Request, dst []byte, ns string, docs []bsoncore.Document) (bsoncore.Document, error) {
	opts, err := req.Document("cursor")
	if err != nil {
		return nil, err
	}
	batch := int64(0) // all
	if v, err := opts.LookupErr("batchSize"); err == nil {
		if batch, err = batchSizeOf(req.Name+".cursor.batchSize", v); err != nil {
			return nil, err
		}
	}
	if batch == 0 || batch >= int64(len(docs)) {
		return cursorReply(dst, ns, 0, docs), nil
	}
	src := &sliceSource{docs: docs}
	r, held, done, err := fillBatch(dst, ns, "firstBatch", nil, src, batch)
	if err != nil {
		return nil, err
	}
	if done {
		return finishCursor(r, 0, ns), nil
	}
	cur := s.Env.Cursors.Register(ns, src, held)
	s.ownCursor(cur)
	s.Env.Cursors.Release(cur, false)
	return finishCursor(r, cur.ID, ns), nil
}

// sliceSource serves documents already in memory (a listing's).
type sliceSource struct{ docs []bsoncore.Document }

func (s *sliceSource) Next() (bsoncore.Document, error) {
	if len(s.docs) == 0 {
		return nil, nil
	}
	d := s.docs[0]
	s.docs = s.docs[1:]
	return d, nil
}

func (s *sliceSource) Close() error { return nil }

// batchSizeOf reads a batch size as MongoDB does (safeInt64, >= 0) and
// returns it as fillBatch's limit: 0 becomes -1, an empty first batch.
func batchSizeOf(path string, v bsoncore.Value) (int64, error) {
	n, err := safeInt64(path, v)
	if err != nil {
		return 0, err
	}
	if err := nonNegative(path, n); err != nil {
		return 0, err
	}
	if n == 0 {
		return -1, nil
	}
	return n, nil
}

// nonNegative is MongoDB's IDL validator "gte: 0" (find's skip, limit and
// batchSize, getMore's batchSize): 51024 names the field without its
// command, as MongoDB's message does.
func nonNegative(path string, n int64) error {
	if n >= 0 {
		return nil
	}
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		path = path[i+1:]
	}
	return mongoerr.New(mongoerr.ValueOutOfRange, "BSON field '%s' value must be >= 0, actual value '%d'", path, n)
}
