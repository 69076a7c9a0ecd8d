package commands

import (
	"github.com/cairndb/cairn/internal/hlc"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// Reply builds a reply document by appending fields; Finish adds ok: 1.
// It appends into a caller-owned buffer so the hot path does not allocate.
type Reply struct {
	buf       []byte
	start     int32
	cursorIdx int32 // the open "cursor" sub-document, for batch builders
	batchN    int64 // documents in the batch fillBatch built (nreturned)
	// atClusterTime, non-zero, is a snapshot read's time, which
	// finishCursor returns in the cursor (readAtClusterTime).
	atClusterTime hlc.Timestamp
}

// NewReply starts a reply document at the end of dst.
func NewReply(dst []byte) *Reply {
	r := &Reply{}
	r.start, r.buf = bsoncore.AppendDocumentStart(dst)
	return r
}

// Int32 appends an int32 field.
func (r *Reply) Int32(k string, v int32) *Reply {
	r.buf = bsoncore.AppendInt32Element(r.buf, k, v)
	return r
}

// Int64 appends an int64 field.
func (r *Reply) Int64(k string, v int64) *Reply {
	r.buf = bsoncore.AppendInt64Element(r.buf, k, v)
	return r
}

// Count appends a count as mongod does: int32, or int64 past 2³¹ (drivers
// and the shell show an int64 count as Long('1'), which scripts compare badly).
func (r *Reply) Count(k string, n int64) *Reply {
	if n >= -1<<31 && n < 1<<31 {
		return r.Int32(k, int32(n))
	}
	return r.Int64(k, n)
}

// Double appends a double field.
func (r *Reply) Double(k string, v float64) *Reply {
	r.buf = bsoncore.AppendDoubleElement(r.buf, k, v)
	return r
}

// Bool appends a boolean field.
func (r *Reply) Bool(k string, v bool) *Reply {
	r.buf = bsoncore.AppendBooleanElement(r.buf, k, v)
	return r
}

// String appends a string field.
func (r *Reply) String(k, v string) *Reply {
	r.buf = bsoncore.AppendStringElement(r.buf, k, v)
	return r
}

// Doc appends an embedded document field.
func (r *Reply) Doc(k string, d bsoncore.Document) *Reply {
	r.buf = bsoncore.AppendDocumentElement(r.buf, k, d)
	return r
}

// Value appends a raw value field.
func (r *Reply) Value(k string, v bsoncore.Value) *Reply {
	r.buf = bsoncore.AppendValueElement(r.buf, k, v)
	return r
}

// Any appends a field from any Go value the bson package marshals.
func (r *Reply) Any(k string, v any) *Reply {
	t, data, err := bson.MarshalValue(v)
	if err != nil {
		r.buf = bsoncore.AppendStringElement(r.buf, k, "<unencodable: "+err.Error()+">")
		return r
	}
	r.buf = bsoncore.AppendValueElement(r.buf, k, bsoncore.Value{Type: bsoncore.Type(t), Data: data})
	return r
}

// DocArray appends an array of documents.
func (r *Reply) DocArray(k string, docs []bsoncore.Document) *Reply {
	var idx int32
	idx, r.buf = bsoncore.AppendArrayElementStart(r.buf, k)
	for i, d := range docs {
		r.buf = bsoncore.AppendDocumentElement(r.buf, strconv.Itoa(i), d)
	}
	r.buf, _ = bsoncore.AppendArrayEnd(r.buf, idx)
	return r
}

// StringArray appends an array of strings.
func (r *Reply) StringArray(k string, ss []string) *Reply {
	var idx int32
	idx, r.buf = bsoncore.AppendArrayElementStart(r.buf, k)
	for i, s := range ss {
		r.buf = bsoncore.AppendStringElement(r.buf, strconv.Itoa(i), s)
	}
	r.buf, _ = bsoncore.AppendArrayEnd(r.buf, idx)
	return r
}

// Raw gives direct access to the buffer for builders that stream fields
// (cursor batches). Callers append complete elements only.
func (r *Reply) Raw() *[]byte { return &r.buf }

// Finish appends ok: 1 and closes the document.
func (r *Reply) Finish() bsoncore.Document {
	r.buf = bsoncore.AppendDoubleElement(r.buf, "ok", 1)
	return r.End()
}

// End closes the document without adding ok (for nested documents).
func (r *Reply) End() bsoncore.Document {
	r.buf, _ = bsoncore.AppendDocumentEnd(r.buf, r.start)
	return r.buf[r.start:]
}

// OK is the reply {ok: 1}.
func OK(dst []byte) bsoncore.Document { return NewReply(dst).Finish() }

// ErrorReply shapes err as MongoDB's {ok: 0, errmsg, code, codeName, …}.
func ErrorReply(dst []byte, err error) bsoncore.Document {
	code, msg := mongoerr.InternalError, err.Error()
	var extra []mongoerr.Field
	if e, ok := mongoerr.As(err); ok {
		code, msg, extra = e.Code, e.Msg, e.Extra
	}
	r := NewReply(dst).Double("ok", 0).String("errmsg", msg).Int32("code", int32(code))
	r.String("codeName", code.Name())
	for _, f := range extra {
		r.Any(f.Name, f.Value)
	}
	return r.End()
}

// doc builds a small document from alternating keys and values; for
// replies off the hot path.
func doc(kv ...any) bsoncore.Document {
	r := NewReply(nil)
	for i := 0; i+1 < len(kv); i += 2 {
		r.Any(kv[i].(string), kv[i+1])
	}
	return r.End()
}
