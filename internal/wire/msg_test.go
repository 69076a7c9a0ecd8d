package wire

import (
	"bytes"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestAppendMsgBytes checks the encoders byte for byte against messages
// built independently, then reads their output back.
func TestAppendMsgBytes(t *testing.T) {
	body := insertBody(t)
	docs := insertDocs(t)
	ok := doc(t, bson.D{{Key: "ok", Value: 1.0}})
	tests := []struct {
		name  string
		build func(dst []byte) []byte
		want  []byte
	}{
		{
			name:  "reply",
			build: func(dst []byte) []byte { return AppendMsg(dst, 10, 4, 0, ok) },
			want:  frame(OpMsg, 10, 4, le32(0), kind0(ok)),
		},
		{
			name:  "reply with checksum",
			build: func(dst []byte) []byte { return AppendMsg(dst, 10, 4, FlagChecksumPresent, ok) },
			want:  withChecksum(frame(OpMsg, 10, 4, le32(0), kind0(ok))),
		},
		{
			name:  "exhaust reply",
			build: func(dst []byte) []byte { return AppendMsg(dst, 11, 10, FlagMoreToCome, ok) },
			want:  frame(OpMsg, 11, 10, le32(uint32(FlagMoreToCome)), kind0(ok)),
		},
		{
			name: "insert with sequences",
			build: func(dst []byte) []byte {
				start, dst := BeginMsg(dst, 12, 0, 0)
				dst = AppendBodySection(dst, body)
				dst = AppendSequenceSection(dst, "documents", docs)
				dst = AppendSequenceSection(dst, "empty", nil)
				return EndMsg(dst, start)
			},
			want: frame(OpMsg, 12, 0, le32(0), kind0(body), kind1("documents", docs...), kind1("empty")),
		},
		{
			name: "body built in place",
			build: func(dst []byte) []byte {
				start, dst := BeginMsg(dst, 13, 5, FlagChecksumPresent)
				dst = append(dst, byte(SectionBody))
				idx, dst := bsoncore.AppendDocumentStart(dst)
				dst = bsoncore.AppendDoubleElement(dst, "ok", 1)
				dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
				return EndMsg(dst, start)
			},
			want: withChecksum(frame(OpMsg, 13, 5, le32(0), kind0(ok))),
		},
		{
			name: "OP_REPLY",
			build: func(dst []byte) []byte {
				return AppendReply(dst, 14, 1, &Reply{Flags: ReplyAwaitCapable, Documents: []bsoncore.Document{ok}})
			},
			want: frame(OpReply, 14, 1, le32(8), make([]byte, 8), le32(0), le32(1), ok),
		},
		{
			name: "OP_QUERY",
			build: func(dst []byte) []byte {
				return AppendQuery(dst, 15, &Query{FullCollectionName: "admin.$cmd", NumberToReturn: -1, Query: ok, ReturnFieldsSelector: ok})
			},
			want: frame(OpQuery, 15, 0, le32(0), cstr("admin.$cmd"), le32(0), le32(0xFFFFFFFF), ok, ok),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.build(nil); !bytes.Equal(got, tt.want) {
				t.Fatalf("got  % x\nwant % x", got, tt.want)
			}
			// Appending after other bytes must leave them be and frame only
			// the new message (the checksum covers only it).
			prefix := []byte("earlier reply")
			got := tt.build(bytes.Clone(prefix))
			if !bytes.Equal(got[:len(prefix)], prefix) || !bytes.Equal(got[len(prefix):], tt.want) {
				t.Fatal("appending after a prefix changed the bytes")
			}
			if _, err := readOne(got[len(prefix):], testMax); err != nil {
				t.Fatalf("reading it back: %v", err)
			}
		})
	}
}

// TestAppendAllocations pins the hot-path invariant: a reply appended into a
// warm buffer allocates nothing, checksum or not.
func TestAppendAllocations(t *testing.T) {
	ok := doc(t, bson.D{{Key: "ok", Value: 1.0}})
	buf := make([]byte, 0, 1024)
	for _, flags := range []MsgFlags{0, FlagChecksumPresent} {
		if n := testing.AllocsPerRun(100, func() { buf = AppendMsg(buf[:0], 1, 2, flags, ok) }); n != 0 {
			t.Errorf("AppendMsg(flags %#x): %v allocations, want 0", flags, n)
		}
	}
	reply := &Reply{Documents: []bsoncore.Document{ok}}
	if n := testing.AllocsPerRun(100, func() { buf = AppendReply(buf[:0], 1, 2, reply) }); n != 0 {
		t.Errorf("AppendReply: %v allocations, want 0", n)
	}
	msg := AppendMsg(nil, 1, 2, 0, ok)
	for _, c := range []Compressor{CompressorNoop, CompressorSnappy, CompressorZlib} {
		if _, err := AppendCompressed(buf[:0], msg, c, DefaultZlibLevel); err != nil {
			t.Fatal(err)
		}
		n := testing.AllocsPerRun(100, func() { buf, _ = AppendCompressed(buf[:0], msg, c, DefaultZlibLevel) })
		if n != 0 && !(raceEnabled && c == CompressorZlib) {
			t.Errorf("AppendCompressed(%v): %v allocations, want 0", c, n)
		}
	}
}

func TestMsgFlagsSurviveRoundTrip(t *testing.T) {
	ok := doc(t, bson.D{{Key: "ok", Value: 1.0}})
	for _, flags := range []MsgFlags{0, FlagChecksumPresent, FlagMoreToCome, FlagExhaustAllowed, FlagChecksumPresent | FlagMoreToCome | FlagExhaustAllowed | 1<<31} {
		m, err := readOne(AppendMsg(nil, 1, 0, flags, ok), testMax)
		if err != nil {
			t.Fatalf("flags %#x: %v", flags, err)
		}
		if m.Msg.Flags != flags || !bytes.Equal(m.Msg.Body, ok) {
			t.Fatalf("flags %#x: read back %#x", flags, m.Msg.Flags)
		}
	}
}

// TestBodyElements: the body's top-level elements, split by the walk that
// validates it, are exactly bsoncore's split of the body, for every
// element type, and a reader's next message (fewer fields) reuses the
// slice without keeping the last one's.
func TestBodyElements(t *testing.T) {
	bodies := []bson.D{
		{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: "k"}}}, {Key: "limit", Value: int64(1)},
			{Key: "singleBatch", Value: true}, {Key: "lsid", Value: bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}}},
			{Key: "$db", Value: "d"}},
		{{Key: "a", Value: 1.5}, {Key: "b", Value: int32(2)}, {Key: "c", Value: bson.A{1, "x", bson.D{}}},
			{Key: "d", Value: bson.Regex{Pattern: "^a", Options: "i"}}, {Key: "e", Value: bson.Null{}}, {Key: "f", Value: bson.MinKey{}},
			{Key: "g", Value: bson.MaxKey{}}, {Key: "h", Value: bson.Undefined{}}, {Key: "i", Value: bson.NewObjectID()},
			{Key: "j", Value: bson.DateTime(7)}, {Key: "k", Value: bson.Timestamp{T: 1, I: 2}}, {Key: "l", Value: bson.NewDecimal128(1, 2)},
			{Key: "m", Value: bson.JavaScript("f()")}, {Key: "n", Value: bson.Symbol("s")},
			{Key: "o", Value: bson.CodeWithScope{Code: "g()", Scope: bson.D{{Key: "x", Value: 1}}}},
			{Key: "p", Value: bson.DBPointer{DB: "db", Pointer: bson.NewObjectID()}}, {Key: "", Value: "empty name"}},
		{{Key: "ping", Value: 1}},
		{},
	}
	var wire []byte
	for i, b := range bodies {
		wire = AppendMsg(wire, int32(i), 0, 0, doc(t, b))
	}
	r := NewReader(bytes.NewReader(wire), testMax)
	for i, b := range bodies {
		m, err := r.ReadMessage()
		if err != nil {
			t.Fatalf("body %d: %v", i, err)
		}
		want, err := m.Msg.Body.Elements()
		if err != nil {
			t.Fatalf("body %d: bsoncore: %v", i, err)
		}
		got := m.Msg.BodyElements
		if len(got) != len(want) || len(want) != len(b) {
			t.Fatalf("body %d: %d elements split, bsoncore %d, sent %d", i, len(got), len(want), len(b))
		}
		for j := range want {
			if !bytes.Equal(got[j], want[j]) {
				t.Fatalf("body %d element %d: %x, want %x", i, j, got[j], want[j])
			}
		}
	}
}
