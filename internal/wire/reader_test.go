package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
	"testing/iotest"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func TestReadLegacyHandshake(t *testing.T) {
	m, err := readOne(isMasterQuery(t), testMax)
	if err != nil {
		t.Fatal(err)
	}
	if m.Header.OpCode != OpQuery || m.Header.RequestID != 1 {
		t.Fatalf("header %+v", m.Header)
	}
	q := m.Query
	if q.FullCollectionName != "admin.$cmd" || q.NumberToSkip != 0 || q.NumberToReturn != -1 || q.ReturnFieldsSelector != nil {
		t.Fatalf("query %+v", q)
	}
	if v := q.Query.Lookup("isMaster").Int32(); v != 1 {
		t.Fatalf("isMaster = %d", v)
	}
	if name := q.Query.Lookup("client", "driver", "name").StringValue(); name != "mongo-go-driver" {
		t.Fatalf("client.driver.name = %q", name)
	}
}

func TestReadHello(t *testing.T) {
	m, err := readOne(helloMsg(t), testMax)
	if err != nil {
		t.Fatal(err)
	}
	if m.Header.OpCode != OpMsg || m.Msg.Flags != 0 || len(m.Msg.Sequences) != 0 {
		t.Fatalf("message %+v", m)
	}
	if db := m.Msg.Body.Lookup("$db").StringValue(); db != "admin" {
		t.Fatalf("$db = %q", db)
	}
	m, err = readOne(streamingHelloMsg(t), testMax)
	if err != nil {
		t.Fatal(err)
	}
	if m.Msg.Flags != FlagExhaustAllowed {
		t.Fatalf("flags = %#x, want exhaustAllowed", m.Msg.Flags)
	}
}

func TestReadInsertSequence(t *testing.T) {
	for name, b := range map[string][]byte{
		"plain":    insertMsg(t),
		"checksum": withChecksum(insertMsg(t)),
		"snappy":   mustCompress(t, insertMsg(t), CompressorSnappy),
		"zlib":     mustCompress(t, withChecksum(insertMsg(t)), CompressorZlib),
		"zstd":     mustCompress(t, insertMsg(t), CompressorZstd),
	} {
		t.Run(name, func(t *testing.T) {
			m, err := readOne(b, testMax)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(m.Msg.Body, insertBody(t)) {
				t.Fatalf("body %v", m.Msg.Body)
			}
			docs, ok := m.Msg.Sequence("documents")
			if !ok || len(docs) != 3 {
				t.Fatalf("documents sequence: %d docs, ok=%v", len(docs), ok)
			}
			if got := docs[1].Lookup("name").StringValue(); got != "grace" {
				t.Fatalf("docs[1].name = %q", got)
			}
			if _, ok := m.Msg.Sequence("updates"); ok {
				t.Fatal("found a sequence that was not sent")
			}
		})
	}
}

func TestReadReply(t *testing.T) {
	m, err := readOne(helloReply(t), testMax)
	if err != nil {
		t.Fatal(err)
	}
	r := m.Reply
	if m.Header.ResponseTo != 1 || r.Flags != ReplyAwaitCapable || r.CursorID != 0 || len(r.Documents) != 1 {
		t.Fatalf("reply %+v", m)
	}
}

// TestReadStream reads every seed back to back through one Reader, which
// reuses its buffers, and checks each against a fresh read of the same bytes.
func TestReadStream(t *testing.T) {
	var stream []byte
	var want []*Message
	for _, b := range seeds(t) {
		stream = append(stream, b...)
		m, err := readOne(b, testMax)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, cloneMessage(m))
	}
	// A reader that returns one byte at a time exercises every partial read.
	r := NewReader(iotest.OneByteReader(bytes.NewReader(stream)), testMax)
	for i, w := range want {
		m, err := r.ReadMessage()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if diff := sameMessage(m, w); diff != "" {
			t.Fatalf("message %d differs in %s", i, diff)
		}
	}
	if _, err := r.ReadMessage(); err != io.EOF {
		t.Fatalf("after the last message: %v, want io.EOF", err)
	}
}

// TestDocumentsAliasBuffer pins the zero-copy invariant: documents point into
// the reader's buffer.
func TestDocumentsAliasBuffer(t *testing.T) {
	b := insertMsg(t)
	r := NewReader(bytes.NewReader(b), testMax)
	m, err := r.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	docs, _ := m.Msg.Sequence("documents")
	for _, d := range append([]bsoncore.Document{m.Msg.Body}, docs...) {
		if !within(d, r.buf) {
			t.Fatal("a document does not alias the read buffer")
		}
	}
}

func within(sub, buf []byte) bool {
	if len(sub) == 0 {
		return false
	}
	for i := range len(buf) - len(sub) + 1 {
		if &buf[i] == &sub[0] {
			return true
		}
	}
	return false
}

func TestReadMalformed(t *testing.T) {
	ping := doc(t, bson.D{{Key: "ping", Value: int32(1)}})
	emptyDoc := doc(t, bson.D{})
	hello := helloMsg(t)
	// header rewrites the length field of a hello, leaving the rest.
	header := func(length uint32) []byte {
		b := bytes.Clone(hello)
		binary.LittleEndian.PutUint32(b, length)
		return b
	}
	badChecksum := withChecksum(hello)
	badChecksum[len(badChecksum)-1] ^= 0xFF
	flippedBody := withChecksum(hello)
	flippedBody[30] ^= 0x01

	// The body of a document whose length claims one byte more than it has.
	lying := bytes.Clone(ping)
	binary.LittleEndian.PutUint32(lying, uint32(len(ping)+1))
	// A sequence whose first document claims more than the sequence holds,
	// though the message (with the body after it) has the bytes.
	seqLie := kind1("documents", lying)

	tests := []struct {
		name  string
		in    []byte
		want  error
		fatal bool
	}{
		{"truncated header", hello[:10], io.ErrUnexpectedEOF, true},
		{"length smaller than header", header(8), ErrMessageTooSmall, true},
		{"length zero", header(0), ErrMessageTooSmall, true},
		{"negative length", header(0xFFFFFFFF), ErrMessageTooSmall, true},
		{"2 GiB length", header(0x80000000), ErrMessageTooSmall, true},
		{"2 GiB - 1 length", header(0x7FFFFFFF), ErrMessageTooLarge, true},
		{"length over max", header(testMax + 1), ErrMessageTooLarge, true},
		{"truncated body", hello[:len(hello)-3], io.ErrUnexpectedEOF, true},
		{"length longer than stream", header(uint32(len(hello) + 100)), io.ErrUnexpectedEOF, true},
		{"OP_MSG shorter than minimum", frame(OpMsg, 9, 0, le32(0), []byte{0}), ErrMalformed, false},
		{"body length lies", frame(OpMsg, 9, 0, le32(0), kind0(lying)), ErrInvalidDocument, false},
		{"body length short", frame(OpMsg, 9, 0, le32(0), kind0(ping[:len(ping)-1])), ErrInvalidDocument, false},
		{"document in sequence overruns it", frame(OpMsg, 9, 0, le32(0), seqLie, kind0(ping)), ErrInvalidDocument, false},
		{"sequence overruns message", frame(OpMsg, 9, 0, le32(0), kind0(ping), []byte{1}, le32(100), cstr("documents")), ErrMalformed, false},
		{"sequence size too small", frame(OpMsg, 9, 0, le32(0), kind0(ping), []byte{1}, le32(3)), ErrMalformed, false},
		{"sequence size negative", frame(OpMsg, 9, 0, le32(0), kind0(ping), []byte{1}, le32(0xFFFFFFF0)), ErrMalformed, false},
		{"sequence identifier unterminated", frame(OpMsg, 9, 0, le32(0), kind0(ping), []byte{1}, le32(8), []byte("docs")), ErrMalformed, false},
		{"sequence identifier empty", frame(OpMsg, 9, 0, le32(0), kind0(ping), kind1("")), ErrMalformed, false},
		{"two sequences, one name", frame(OpMsg, 9, 0, le32(0), kind0(ping), kind1("documents", ping), kind1("documents")), ErrMalformed, false},
		{"section kind cut short", frame(OpMsg, 9, 0, le32(0), kind0(ping), []byte{1, 9, 0}), ErrMalformed, false},
		{"bad checksum", badChecksum, ErrChecksum, true},
		{"body changed under checksum", flippedBody, ErrChecksum, true},
		{"checksum flag without room", frame(OpMsg, 9, 0, le32(1), kind0(emptyDoc)), ErrMalformed, false},
		{"unknown section kind", frame(OpMsg, 9, 0, le32(0), kind0(ping), []byte{2}, ping), ErrSectionKind, true},
		{"two body sections", frame(OpMsg, 9, 0, le32(0), kind0(ping), kind0(ping)), ErrBodySection, false},
		{"no body section", frame(OpMsg, 9, 0, le32(0), kind1("documents", ping, ping)), ErrBodySection, false},
		{"unknown required flag bit", frame(OpMsg, 9, 0, le32(1<<2), kind0(ping)), ErrRequiredFlags, false},
		{"unknown required flag bit 15", frame(OpMsg, 9, 0, le32(1<<15), kind0(ping)), ErrRequiredFlags, false},
		{"corrupt nested document", frame(OpMsg, 9, 0, le32(0), kind0(corruptNested(t))), ErrInvalidDocument, false},
		{"unsupported opcode OP_INSERT", frame(2002, 9, 0, le32(0), cstr("db.c"), ping), ErrUnsupportedOpCode, false},
		{"OP_QUERY name unterminated", frame(OpQuery, 9, 0, le32(0), []byte("admin.$cmdxxxxxxxxxx")), ErrMalformed, false},
		{"OP_QUERY without query", frame(OpQuery, 9, 0, le32(0), cstr("admin.$cmd"), le32(0), le32(1), []byte{0, 0, 0, 0, 0}), ErrInvalidDocument, false},
		{"OP_QUERY trailing bytes", frame(OpQuery, 9, 0, le32(0), cstr("admin.$cmd"), le32(0), le32(1), ping, ping, []byte{0}), ErrMalformed, false},
		{"OP_REPLY count lies", frame(OpReply, 9, 1, le32(0), make([]byte, 8), le32(0), le32(2), ping), ErrMalformed, false},
		{"OP_REPLY count negative", frame(OpReply, 9, 1, le32(0), make([]byte, 8), le32(0), le32(0xFFFFFFFF), ping), ErrMalformed, false},
		{"OP_REPLY count huge", frame(OpReply, 9, 1, le32(0), make([]byte, 8), le32(1<<30), ping), ErrMalformed, false},
		{"OP_REPLY cut short", frame(OpReply, 9, 1, le32(0)), ErrMalformed, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkReadError(t, tt.in, tt.want, tt.fatal)
		})
	}
}

// checkReadError reads in and expects err; a non-fatal error must leave the
// stream at the next message, so a hello placed after it must read cleanly.
func checkReadError(t *testing.T, in []byte, want error, fatal bool) {
	t.Helper()
	stream := bytes.Clone(in)
	if !fatal {
		stream = append(stream, helloMsg(t)...)
	}
	r := NewReader(bytes.NewReader(stream), testMax)
	m, err := r.ReadMessage()
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
	if m != nil {
		t.Fatal("a message came back with an error")
	}
	if IsFatal(err) != fatal {
		t.Fatalf("IsFatal = %v, want %v (%v)", IsFatal(err), fatal, err)
	}
	if fatal {
		return
	}
	var e *Error
	if !errors.As(err, &e) || !e.HeaderKnown {
		t.Fatalf("a recoverable error must name its request: %#v", err)
	}
	if m, err := r.ReadMessage(); err != nil || m.Header.RequestID != 2 {
		t.Fatalf("reading on after a recoverable error: %v", err)
	}
}

// corruptNested is a valid document whose embedded document's length lies.
func corruptNested(t *testing.T) []byte {
	d := doc(t, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: int32(1)}}}})
	i := bytes.Index(d, []byte("filter\x00")) + len("filter\x00")
	binary.LittleEndian.PutUint32(d[i:], 200)
	return d
}

// TestNoAllocationBeforeValidation: a refused length leaves the buffer as it
// was, and a length that is allowed but not delivered grows the buffer only
// as far as the bytes that came.
func TestNoAllocationBeforeValidation(t *testing.T) {
	for _, length := range []uint32{0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, DefaultMaxMessageSize + 1} {
		b := frame(OpMsg, 1, 0)
		binary.LittleEndian.PutUint32(b, length)
		r := NewReader(bytes.NewReader(b), DefaultMaxMessageSize)
		allocated := bytesAllocated(func() {
			if _, err := r.ReadMessage(); err == nil {
				t.Fatal("no error")
			}
		})
		// The *Error and its detail cost a few small allocations; a buffer
		// sized by the header would cost megabytes.
		if cap(r.buf) != 0 || allocated > 64<<10 {
			t.Fatalf("length %#x: buffer cap %d, %d bytes allocated", length, cap(r.buf), allocated)
		}
	}

	// A 40 MB claim followed by 100 bytes and a hang-up.
	b := append(le32(40_000_000), make([]byte, 100)...)
	r := NewReader(bytes.NewReader(b), DefaultMaxMessageSize)
	allocated := bytesAllocated(func() {
		if _, err := r.ReadMessage(); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("err = %v", err)
		}
	})
	if cap(r.buf) > minBufferSize || allocated > 64<<10 {
		t.Fatalf("100 bytes of a 40 MB claim: buffer cap %d, %d bytes allocated", cap(r.buf), allocated)
	}
}

// bytesAllocated reports how many bytes the heap handed out while f ran.
func bytesAllocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestLargeMessageBufferReleased: after a large message, small ones do not
// keep the large buffer alive.
func TestLargeMessageBufferReleased(t *testing.T) {
	big := doc(t, bson.D{{Key: "blob", Value: bson.Binary{Data: make([]byte, 2*maxRetainedBuffer)}}})
	stream := frame(OpMsg, 1, 0, le32(0), kind0(big))
	stream = append(stream, helloMsg(t)...)
	r := NewReader(bytes.NewReader(stream), 4*maxRetainedBuffer)
	if _, err := r.ReadMessage(); err != nil {
		t.Fatal(err)
	}
	if cap(r.buf) < 2*maxRetainedBuffer {
		t.Fatalf("buffer cap %d after a big message", cap(r.buf))
	}
	if _, err := r.ReadMessage(); err != nil {
		t.Fatal(err)
	}
	if cap(r.buf) > maxRetainedBuffer {
		t.Fatalf("buffer cap %d kept after a small message", cap(r.buf))
	}
}

func TestReadAllocations(t *testing.T) {
	for name, b := range map[string][]byte{"hello": helloMsg(t), "insert": insertMsg(t), "checksum": withChecksum(insertMsg(t))} {
		src := bytes.NewReader(b)
		r := NewReader(src, testMax)
		read := func() {
			src.Reset(b)
			if _, err := r.ReadMessage(); err != nil {
				t.Fatal(err)
			}
		}
		read() // warm the buffers
		if n := testing.AllocsPerRun(100, read); n != 0 {
			t.Errorf("%s: %v allocations per warm read, want 0", name, n)
		}
	}
}

func TestErrorReportsRequest(t *testing.T) {
	_, err := readOne(frame(OpMsg, 77, 0, le32(1<<3), kind0(doc(t, bson.D{{Key: "ping", Value: 1}}))), testMax)
	var e *Error
	if !errors.As(err, &e) || !e.HeaderKnown || e.Header.RequestID != 77 || e.Header.OpCode != OpMsg {
		t.Fatalf("error %#v", err)
	}
	const want = "wire: unknown required flag bits (requestID 77, OP_MSG): flagBits 0x00000008"
	if err.Error() != want {
		t.Fatalf("Error() = %q, want %q", err.Error(), want)
	}
}

func TestIsFatal(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{io.EOF, true},
		{errors.New("connection reset"), true},
		{newError(ErrChecksum, ""), true},
		{newError(ErrInvalidDocument, ""), false},
	} {
		if got := IsFatal(tt.err); got != tt.want {
			t.Errorf("IsFatal(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestOpCodeString(t *testing.T) {
	for op, want := range map[OpCode]string{OpMsg: "OP_MSG", OpQuery: "OP_QUERY", OpReply: "OP_REPLY", OpCompressed: "OP_COMPRESSED", 2002: "opcode(2002)"} {
		if got := op.String(); got != want {
			t.Errorf("%d: %q, want %q", int32(op), got, want)
		}
	}
}
