package planner

import (
	"encoding/binary"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/keystring"
)

// find's returnKey and showRecordId (Query.ReturnKey, Query.ShowRecordID),
// as MongoDB 7.0 answers them:
//
//   - returnKey: each result is the index key its plan read it by, one
//     field per key pattern field ({} from a collection scan; {_id: v} from
//     the _id index), in its stored type where the entry has type bits; the
//     projection is ignored (MongoDB's RETURN_KEY stage sits where the
//     projection would). A missing field's key is null, as MongoDB's is.
//   - showRecordId: "$recordId" is appended to each result. Cairn's record
//     id is the document's key, keystring(_id) (documents are clustered by
//     _id), so it is BinData of subtype 0 holding those bytes, the shape
//     MongoDB gives the record ids of clustered collections, rather than
//     the NumberLong of an ordinary one.
//
// A blocking SORT keeps documents, not records: under these options it
// carries each record's identity and key through the sort in a trailing
// field (sortCarryField) and restores them (see sortStage).

// recordIDField is the field showRecordId adds.
const recordIDField = "$recordId"

// returnKeyStage turns each result into its index key and/or adds its
// record id.
type returnKeyStage struct {
	stageStats
	oneInput
	returnKey, showRecordID bool
	fromID                  bool // the plan is IDHACK: its key is {_id: v}
	buf                     []byte
	m                       member
}

func (s *returnKeyStage) work(x *execCtx) (*member, state, error) {
	m, st, err := step(x, s.in())
	if st != advanced || err != nil {
		return nil, st, err
	}
	d := m.doc
	if s.returnKey {
		if s.buf, err = appendKeyDocument(s.buf[:0], m, s.fromID); err != nil {
			return nil, isEOF, err
		}
		d = s.buf
	}
	if s.showRecordID && m.rid != nil {
		out := make([]byte, 0, len(d)+len(m.rid)+len(recordIDField)+8)
		out = append(out, d[:len(d)-1]...)
		out = bsoncore.AppendBinaryElement(out, recordIDField, 0, m.rid)
		out = append(out, 0)
		binary.LittleEndian.PutUint32(out, uint32(len(out)))
		s.buf, d = out, out
	}
	s.m = member{rid: m.rid, doc: d}
	return &s.m, advanced, nil
}

// appendKeyDocument appends the index key m was read by, as a document.
func appendKeyDocument(dst []byte, m *member, fromID bool) ([]byte, error) {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	switch {
	case m.ix == nil && !fromID:
		// a collection scan: no index key
	case m.ix == nil || m.ix.ix.isID:
		if id, err := m.doc.LookupErr("_id"); err == nil {
			dst = bsoncore.AppendValueElement(dst, "_id", id)
		} else if id, _, err := keystring.Decode(m.rid); err == nil {
			dst = bsoncore.AppendValueElement(dst, "_id", id)
		}
	default:
		ix := m.ix.ix
		vals, _, err := ix.spec.DecodeKeyTyped(m.key, m.tb) // no bits: as DecodeKey
		if err != nil {
			return dst, err
		}
		fields := ix.fields
		if fields == nil {
			fields = ix.spec.KeyPattern
		}
		for i, f := range fields {
			if i >= len(vals) {
				break
			}
			v := vals[i]
			switch {
			case v.Type == 0:
				v = bsoncore.Value{Type: bsoncore.TypeNull} // a missing field's key
			case f.Kind == index.Hashed && v.Type == bsoncore.TypeInt32:
				v = bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, int64(v.Int32()))}
			}
			dst = bsoncore.AppendValueElement(dst, f.Path, v)
		}
	}
	return bsoncore.AppendDocumentEnd(dst, idx)
}

func (s *returnKeyStage) close() error { return nil }
func (s *returnKeyStage) describe(d *doc, withStats bool) {
	if s.returnKey {
		put(d, "stage", "RETURN_KEY")
	} else {
		// showRecordId alone is metadata in MongoDB's plans: no stage of
		// its own. Cairn's pass-through shows under a name of its own.
		put(d, "stage", "SHOW_RECORD_ID")
	}
	if withStats {
		addCommon(d, &s.stats)
	}
}

// sortCarryField is the trailing field in which a SORT under returnKey or
// showRecordId carries each record's identity and key; no user field can
// have the name (fields cannot start with "$" in stored documents).
const sortCarryField = "$cairnRecord"

// appendCarry appends m's document with the carry field: the index of m's
// scan in scans (+1, 0 for none), rid, key and type bits, each
// length-prefixed.
func appendCarry(dst []byte, m *member, scans *[]*ixScan) []byte {
	n := 0
	if m.ix != nil {
		for i, s := range *scans {
			if s == m.ix {
				n = i + 1
			}
		}
		if n == 0 {
			*scans = append(*scans, m.ix)
			n = len(*scans)
		}
	}
	var meta []byte
	meta = binary.AppendUvarint(meta, uint64(n))
	for _, part := range [][]byte{m.rid, m.key, m.tb} {
		meta = binary.AppendUvarint(meta, uint64(len(part)))
		meta = append(meta, part...)
	}
	d := m.doc
	start := len(dst)
	dst = append(dst, d[:len(d)-1]...)
	dst = bsoncore.AppendBinaryElement(dst, sortCarryField, 0, meta)
	dst = append(dst, 0)
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(dst)-start))
	return dst
}

// restoreCarry undoes appendCarry: the member as it entered the sort.
func restoreCarry(d bsoncore.Document, scans []*ixScan) member {
	elems, err := d.Elements()
	if err != nil || len(elems) == 0 || elems[len(elems)-1].Key() != sortCarryField {
		return member{doc: d}
	}
	last := elems[len(elems)-1]
	_, meta, _ := last.Value().BinaryOK()
	doc := make([]byte, 0, len(d)-len(last))
	doc = append(doc, d[:len(d)-1-len(last)]...)
	doc = append(doc, 0)
	binary.LittleEndian.PutUint32(doc, uint32(len(doc)))
	m := member{doc: doc}
	n, k := binary.Uvarint(meta)
	meta = meta[max(k, 0):]
	if n > 0 && int(n) <= len(scans) {
		m.ix = scans[n-1]
	}
	parts := make([][]byte, 3)
	for i := range parts {
		l, k := binary.Uvarint(meta)
		if k <= 0 || int(l) > len(meta)-k {
			return m
		}
		parts[i] = meta[k : k+int(l)]
		meta = meta[k+int(l):]
	}
	m.rid, m.key, m.tb = parts[0], parts[1], parts[2]
	return m
}
