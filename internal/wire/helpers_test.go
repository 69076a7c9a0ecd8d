package wire

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// This file builds messages the way drivers send them, with byte-level
// helpers written independently of the package's encoders, so that the
// reader is checked against bytes the encoders did not produce.

const testMax = 1 << 20 // a small maximum keeps bomb tests cheap

func doc(tb testing.TB, v any) bsoncore.Document {
	tb.Helper()
	b, err := bson.Marshal(v)
	if err != nil {
		tb.Fatalf("bson.Marshal: %v", err)
	}
	return b
}

func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

func cstr(s string) []byte { return append([]byte(s), 0) }

// frame prepends a standard header to the concatenated parts.
func frame(op OpCode, requestID, responseTo int32, parts ...[]byte) []byte {
	body := bytes.Join(parts, nil)
	b := le32(uint32(HeaderSize + len(body)))
	b = append(b, le32(uint32(requestID))...)
	b = append(b, le32(uint32(responseTo))...)
	b = append(b, le32(uint32(op))...)
	return append(b, body...)
}

// withChecksum sets checksumPresent on an OP_MSG and appends its CRC-32C.
func withChecksum(msg []byte) []byte {
	out := append([]byte(nil), msg...)
	binary.LittleEndian.PutUint32(out[HeaderSize:], binary.LittleEndian.Uint32(out[HeaderSize:])|1)
	binary.LittleEndian.PutUint32(out, uint32(len(out)+4))
	return binary.LittleEndian.AppendUint32(out, crc32.Checksum(out, crc32.MakeTable(crc32.Castagnoli)))
}

func kind0(d bsoncore.Document) []byte { return append([]byte{0}, d...) }

func kind1(id string, docs ...bsoncore.Document) []byte {
	payload := cstr(id)
	for _, d := range docs {
		payload = append(payload, d...)
	}
	return append(append([]byte{1}, le32(uint32(4+len(payload)))...), payload...)
}

// clientMetadata is the handshake's client document, as the Go driver fills it.
func clientMetadata() bson.D {
	return bson.D{
		{Key: "application", Value: bson.D{{Key: "name", Value: "cairn-test"}}},
		{Key: "driver", Value: bson.D{{Key: "name", Value: "mongo-go-driver"}, {Key: "version", Value: "v2.10.0"}}},
		{Key: "os", Value: bson.D{{Key: "type", Value: "linux"}, {Key: "architecture", Value: "amd64"}}},
		{Key: "platform", Value: "go1.26.8"},
	}
}

// isMasterQuery is the legacy handshake: an OP_QUERY isMaster to admin.$cmd.
func isMasterQuery(tb testing.TB) []byte {
	q := doc(tb, bson.D{
		{Key: "isMaster", Value: int32(1)},
		{Key: "helloOk", Value: true},
		{Key: "client", Value: clientMetadata()},
		{Key: "compression", Value: bson.A{"snappy", "zstd", "zlib"}},
	})
	return frame(OpQuery, 1, 0, le32(0), cstr("admin.$cmd"), le32(0), le32(0xFFFFFFFF), q)
}

// helloMsg is the OP_MSG handshake a driver with OP_MSG support sends.
func helloMsg(tb testing.TB) []byte {
	body := doc(tb, bson.D{
		{Key: "hello", Value: int32(1)},
		{Key: "helloOk", Value: true},
		{Key: "client", Value: clientMetadata()},
		{Key: "compression", Value: bson.A{"zstd"}},
		{Key: "$db", Value: "admin"},
	})
	return frame(OpMsg, 2, 0, le32(0), kind0(body))
}

// streamingHelloMsg is the monitoring hello of a 4.4+ driver: exhaustAllowed,
// topologyVersion and maxAwaitTimeMS.
func streamingHelloMsg(tb testing.TB) []byte {
	body := doc(tb, bson.D{
		{Key: "hello", Value: int32(1)},
		{Key: "topologyVersion", Value: bson.D{{Key: "processId", Value: bson.NewObjectID()}, {Key: "counter", Value: int64(0)}}},
		{Key: "maxAwaitTimeMS", Value: int64(10000)},
		{Key: "$db", Value: "admin"},
	})
	return frame(OpMsg, 3, 0, le32(uint32(FlagExhaustAllowed)), kind0(body))
}

func insertBody(tb testing.TB) bsoncore.Document {
	return doc(tb, bson.D{
		{Key: "insert", Value: "users"},
		{Key: "ordered", Value: true},
		{Key: "lsid", Value: bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: bytes.Repeat([]byte{7}, 16)}}}},
		{Key: "$db", Value: "app"},
	})
}

func insertDocs(tb testing.TB) []bsoncore.Document {
	return []bsoncore.Document{
		doc(tb, bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "name", Value: "ada"}, {Key: "age", Value: int32(36)}}),
		doc(tb, bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "name", Value: "grace"}, {Key: "tags", Value: bson.A{"navy", 1.5, nil}}}),
		doc(tb, bson.D{{Key: "_id", Value: int64(3)}}),
	}
}

// insertMsg is an insert with its documents in a kind-1 sequence, placed
// before the body as the specification allows.
func insertMsg(tb testing.TB) []byte {
	return frame(OpMsg, 4, 0, le32(0), kind1("documents", insertDocs(tb)...), kind0(insertBody(tb)))
}

// helloReply is an OP_REPLY answering the legacy handshake.
func helloReply(tb testing.TB) []byte {
	d := doc(tb, bson.D{{Key: "isWritablePrimary", Value: true}, {Key: "maxWireVersion", Value: int32(21)}, {Key: "ok", Value: 1.0}})
	return frame(OpReply, 5, 1, le32(8), binary.LittleEndian.AppendUint64(nil, 0), le32(0), le32(1), d)
}

// seeds are well-formed messages of every kind, for tables and fuzzing.
func seeds(tb testing.TB) map[string][]byte {
	return map[string][]byte{
		"isMaster OP_QUERY":        isMasterQuery(tb),
		"hello OP_MSG":             helloMsg(tb),
		"streaming hello":          streamingHelloMsg(tb),
		"insert with sequence":     insertMsg(tb),
		"insert with checksum":     withChecksum(insertMsg(tb)),
		"hello OP_REPLY":           helloReply(tb),
		"hello snappy":             mustCompress(tb, helloMsg(tb), CompressorSnappy),
		"insert zlib":              mustCompress(tb, insertMsg(tb), CompressorZlib),
		"insert zstd checksum":     mustCompress(tb, withChecksum(insertMsg(tb)), CompressorZstd),
		"isMaster noop":            mustCompress(tb, isMasterQuery(tb), CompressorNoop),
		"reply zstd":               mustCompress(tb, helloReply(tb), CompressorZstd),
		"query with projection":    queryWithSelector(tb),
		"empty sequence":           frame(OpMsg, 6, 0, le32(0), kind0(doc(tb, bson.D{{Key: "ping", Value: 1}})), kind1("documents")),
		"optional flag bit 20 set": frame(OpMsg, 7, 0, le32(1<<20), kind0(doc(tb, bson.D{{Key: "ping", Value: 1}}))),
	}
}

func queryWithSelector(tb testing.TB) []byte {
	q := doc(tb, bson.D{{Key: "ismaster", Value: true}})
	sel := doc(tb, bson.D{{Key: "maxWireVersion", Value: 1}})
	return frame(OpQuery, 8, 0, le32(4), cstr("admin.$cmd"), le32(0), le32(0xFFFFFFFF), q, sel)
}

func mustCompress(tb testing.TB, msg []byte, c Compressor) []byte {
	tb.Helper()
	out, err := AppendCompressed(nil, msg, c, DefaultZlibLevel)
	if err != nil {
		tb.Fatalf("AppendCompressed(%v): %v", c, err)
	}
	return out
}

// compressedFrame builds an OP_COMPRESSED by hand, so tests can lie in it.
func compressedFrame(requestID int32, original OpCode, uncompressedSize int32, id Compressor, payload []byte) []byte {
	return frame(OpCompressed, requestID, 0, le32(uint32(original)), le32(uint32(uncompressedSize)), []byte{byte(id)}, payload)
}

// readOne reads the single message in b.
func readOne(b []byte, maxSize int) (*Message, error) {
	return NewReader(bytes.NewReader(b), maxSize).ReadMessage()
}

// reencode writes m back out with the package's encoders.
func reencode(tb testing.TB, m *Message) []byte {
	tb.Helper()
	var out []byte
	switch m.Header.OpCode {
	case OpMsg:
		start, dst := BeginMsg(nil, m.Header.RequestID, m.Header.ResponseTo, m.Msg.Flags)
		dst = AppendBodySection(dst, m.Msg.Body)
		for _, s := range m.Msg.Sequences {
			dst = AppendSequenceSection(dst, s.Identifier, s.Documents)
		}
		out = EndMsg(dst, start)
	case OpQuery:
		out = AppendQuery(nil, m.Header.RequestID, &m.Query)
		// OP_QUERY's responseTo means nothing and AppendQuery writes 0;
		// carry the input's over so the headers compare equal.
		binary.LittleEndian.PutUint32(out[8:], uint32(m.Header.ResponseTo))
	case OpReply:
		out = AppendReply(nil, m.Header.RequestID, m.Header.ResponseTo, &m.Reply)
	default:
		tb.Fatalf("reencode: opcode %v", m.Header.OpCode)
	}
	if m.Compressed {
		var err error
		if out, err = AppendCompressed(nil, out, m.Compressor, DefaultZlibLevel); err != nil {
			tb.Fatalf("AppendCompressed: %v", err)
		}
	}
	return out
}

// sameMessage reports how a and b differ, or "" when they are the same
// message (section order aside: sequences compare by position after the body).
func sameMessage(a, b *Message) string {
	switch {
	case a.Header != b.Header:
		return "header"
	case a.Compressed != b.Compressed || a.Compressed && a.Compressor != b.Compressor:
		return "compression"
	}
	switch a.Header.OpCode {
	case OpMsg:
		if a.Msg.Flags != b.Msg.Flags || !bytes.Equal(a.Msg.Body, b.Msg.Body) || len(a.Msg.Sequences) != len(b.Msg.Sequences) {
			return "OP_MSG flags, body or sequence count"
		}
		for i := range a.Msg.Sequences {
			sa, sb := a.Msg.Sequences[i], b.Msg.Sequences[i]
			if sa.Identifier != sb.Identifier || !sameDocs(sa.Documents, sb.Documents) {
				return "sequence " + sa.Identifier
			}
		}
	case OpQuery:
		qa, qb := a.Query, b.Query
		if qa.Flags != qb.Flags || qa.FullCollectionName != qb.FullCollectionName || qa.NumberToSkip != qb.NumberToSkip ||
			qa.NumberToReturn != qb.NumberToReturn || !bytes.Equal(qa.Query, qb.Query) ||
			!bytes.Equal(qa.ReturnFieldsSelector, qb.ReturnFieldsSelector) || (qa.ReturnFieldsSelector == nil) != (qb.ReturnFieldsSelector == nil) {
			return "OP_QUERY fields"
		}
	case OpReply:
		ra, rb := a.Reply, b.Reply
		if ra.Flags != rb.Flags || ra.CursorID != rb.CursorID || ra.StartingFrom != rb.StartingFrom || !sameDocs(ra.Documents, rb.Documents) {
			return "OP_REPLY fields"
		}
	}
	return ""
}

func sameDocs(a, b []bsoncore.Document) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// cloneMessage copies m out of its reader's buffers.
func cloneMessage(m *Message) *Message {
	c := *m
	c.Msg.Body = bytes.Clone(m.Msg.Body)
	c.Msg.Sequences = nil
	for _, s := range m.Msg.Sequences {
		c.Msg.Sequences = append(c.Msg.Sequences, Sequence{Identifier: s.Identifier, Documents: cloneDocs(s.Documents)})
	}
	c.Query.Query = bytes.Clone(m.Query.Query)
	c.Query.ReturnFieldsSelector = bytes.Clone(m.Query.ReturnFieldsSelector)
	c.Reply.Documents = cloneDocs(m.Reply.Documents)
	return &c
}

func cloneDocs(docs []bsoncore.Document) []bsoncore.Document {
	var out []bsoncore.Document
	for _, d := range docs {
		out = append(out, bytes.Clone(d))
	}
	return out
}
