package changestream

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// evDoc builds one event's document by appending its elements to a buffer
// sized for the whole event up front: every insert, update and delete
// builds one for the streams of each shape, and a DocumentBuilder grew its
// buffer (and built each nested document) in an allocation apiece.
type evDoc struct {
	b []byte
}

// newEvDoc starts a document with room for size bytes.
func newEvDoc(size int) *evDoc {
	d := &evDoc{b: make([]byte, 4, size)}
	return d
}

func (d *evDoc) AppendDocument(key string, doc bsoncore.Document) *evDoc {
	d.b = bsoncore.AppendDocumentElement(d.b, key, doc)
	return d
}

func (d *evDoc) AppendString(key, s string) *evDoc {
	d.b = bsoncore.AppendStringElement(d.b, key, s)
	return d
}

func (d *evDoc) AppendTimestamp(key string, t, i uint32) *evDoc {
	d.b = bsoncore.AppendTimestampElement(d.b, key, t, i)
	return d
}

func (d *evDoc) AppendValue(key string, v bsoncore.Value) *evDoc {
	d.b = bsoncore.AppendValueElement(d.b, key, v)
	return d
}

func (d *evDoc) AppendBinary(key string, subtype byte, data []byte) *evDoc {
	d.b = bsoncore.AppendBinaryElement(d.b, key, subtype, data)
	return d
}

func (d *evDoc) AppendNull(key string) *evDoc {
	d.b = bsoncore.AppendNullElement(d.b, key)
	return d
}

// Build ends the document and returns it; the evDoc is not used after.
func (d *evDoc) Build() bsoncore.Document {
	d.b = append(d.b, 0)
	bsoncore.UpdateLength(d.b, 0, int32(len(d.b)))
	return d.b
}

// appendNS appends {db, coll} (coll left out when "") as key.
func (d *evDoc) appendNS(key, db, coll string) *evDoc {
	d.b = appendNSElement(d.b, key, db, coll)
	return d
}

// appendNSElement appends {db, coll} (coll left out when "") as key: an
// event's ns, and its head's (prefilter.go).
func appendNSElement(b []byte, key, db, coll string) []byte {
	var idx int32
	idx, b = bsoncore.AppendDocumentElementStart(b, key)
	b = bsoncore.AppendStringElement(b, "db", db)
	if coll != "" {
		b = bsoncore.AppendStringElement(b, "coll", coll)
	}
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}
