package wire

import (
	"bufio"
	"errors"
	"io"
	"math"
)

// Message is one message read by a [Reader]. Header.OpCode says which of
// Msg, Query and Reply holds it. Its documents alias the Reader's buffer and
// are valid until the next [Reader.ReadMessage].
type Message struct {
	// Header is the message's header. For a compressed message it is the
	// header of the message inside: OpCode is originalOpcode and
	// MessageLength is its uncompressed length.
	Header Header
	// Compressed reports that the message arrived as OP_COMPRESSED, with
	// Compressor; a server answers a compressed request compressed.
	Compressed bool
	// Compressor is the compressor the message arrived with; meaningful
	// only when Compressed.
	Compressor Compressor
	// Msg holds an OP_MSG.
	Msg Msg
	// Query holds an OP_QUERY.
	Query Query
	// Reply holds an OP_REPLY.
	Reply Reply
}

// Buffer sizes. A connection's buffers start at minBufferSize and double as
// bytes arrive; one that grew past maxRetainedBuffer for a rare large message
// is let go once messages are small again, so that a thousand idle
// connections do not each pin their largest message.
const (
	readBufferSize    = 16 << 10
	minBufferSize     = 4 << 10
	maxRetainedBuffer = 1 << 20
)

// Reader reads messages from one connection, reusing its buffers. It is not
// safe for concurrent use.
type Reader struct {
	src      *bufio.Reader
	max      int
	header   [HeaderSize]byte
	buf      []byte // the message as read
	inflated []byte // the message inside an OP_COMPRESSED
	msg      Message
}

// NewReader returns a Reader of the messages in r, refusing any message
// (compressed or not) longer than maxMessageSize bytes, header included;
// [DefaultMaxMessageSize] is MongoDB's. A maxMessageSize of 0 or less means
// the default. r is buffered unless it is already a *bufio.Reader.
func NewReader(r io.Reader, maxMessageSize int) *Reader {
	if maxMessageSize <= 0 {
		maxMessageSize = DefaultMaxMessageSize
	}
	maxMessageSize = min(maxMessageSize, math.MaxInt32)
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, readBufferSize)
	}
	return &Reader{src: br, max: maxMessageSize}
}

// ReadMessage reads the next message. The returned Message, and every
// document in it, is valid only until the next call.
//
// At a clean end of stream (no byte of a new message) it returns io.EOF.
// Errors of the underlying reader are returned as they are. Everything else
// is an [*Error]; see [IsFatal] for whether the connection can go on.
func (r *Reader) ReadMessage() (*Message, error) {
	h, err := r.readHeader()
	if err != nil {
		return nil, err
	}
	if !readable(h.OpCode) {
		// Consume the body so the stream stays at a message boundary and
		// the server can answer with an error.
		if _, err := r.src.Discard(int(h.MessageLength) - HeaderSize); err != nil {
			return nil, r.readError(h, err)
		}
		return nil, withHeader(h, newError(ErrUnsupportedOpCode, ""))
	}
	b, err := r.readBody(h)
	if err != nil {
		return nil, r.readError(h, err)
	}
	if err := r.decode(h, b); err != nil {
		return nil, err
	}
	return &r.msg, nil
}

// readable reports whether ReadMessage decodes op (possibly after
// decompressing it).
func readable(op OpCode) bool {
	switch op {
	case OpMsg, OpQuery, OpReply, OpCompressed:
		return true
	}
	return false
}

// readHeader reads and bounds-checks the header. This is the only read of
// a message that happens before its length is trusted, and it reads into a
// fixed array.
func (r *Reader) readHeader() (Header, error) {
	if _, err := io.ReadFull(r.src, r.header[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return Header{}, newError(ErrTruncated, "in the header")
		}
		return Header{}, err
	}
	h := parseHeader(r.header[:])
	switch {
	case h.MessageLength < HeaderSize:
		return h, withHeader(h, newError(ErrMessageTooSmall, "length %d", h.MessageLength))
	case int64(h.MessageLength) > int64(r.max):
		return h, withHeader(h, newError(ErrMessageTooLarge, "length %d exceeds maximum %d", h.MessageLength, r.max))
	}
	return h, nil
}

// readBody reads the rest of the message whose header is h into r.buf and
// returns the whole message, header included.
func (r *Reader) readBody(h Header) ([]byte, error) {
	total := int(h.MessageLength)
	if cap(r.buf) > maxRetainedBuffer && total <= maxRetainedBuffer {
		r.buf = nil
	}
	buf := r.buf[:0]
	if cap(buf) < HeaderSize {
		buf = make([]byte, 0, minBufferSize)
	}
	buf = append(buf, r.header[:]...)
	buf, err := fill(buf, r.src, total, r.max)
	r.buf = buf
	return buf, err
}

// readError reports an I/O error met inside a message: a stream that ends
// there is a truncated message, not a clean EOF.
func (r *Reader) readError(h Header, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return withHeader(h, newError(ErrTruncated, "stream ended inside a message of %d bytes", h.MessageLength))
	}
	return err
}

// decode parses the message b, whose header is h, into r.msg.
func (r *Reader) decode(h Header, b []byte) error {
	m := &r.msg
	m.Compressed = false
	m.Compressor = 0
	if h.OpCode == OpCompressed {
		inner, c, err := decompress(r.inflated, b, r.max)
		r.inflated = inner
		if err != nil {
			return withHeader(h, err)
		}
		m.Compressed, m.Compressor = true, c
		h, b = parseHeader(inner), inner
	}
	m.Header = h
	var err error
	switch h.OpCode {
	case OpMsg:
		err = parseMsg(b, &m.Msg)
	case OpQuery:
		err = parseQuery(b, &m.Query)
	case OpReply:
		err = parseReply(b, &m.Reply)
	default:
		err = newError(ErrUnsupportedOpCode, "inside OP_COMPRESSED")
	}
	if err != nil {
		return withHeader(h, err)
	}
	return nil
}

// withHeader records the header of the message an error belongs to.
func withHeader(h Header, err error) error {
	if e, ok := err.(*Error); ok {
		e.Header, e.HeaderKnown = h, true
	}
	return err
}

// fill reads from src until buf holds total bytes. It grows buf only as
// bytes arrive — doubling, never past limit — so that a length that claims
// much and delivers little costs little.
func fill(buf []byte, src io.Reader, total, limit int) ([]byte, error) {
	for len(buf) < total {
		if len(buf) == cap(buf) {
			buf = grow(buf, limit)
		}
		n, err := src.Read(buf[len(buf):min(cap(buf), total)])
		buf = buf[:len(buf)+n]
		if len(buf) == total {
			break
		}
		if err == io.EOF {
			return buf, io.ErrUnexpectedEOF
		}
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// grow returns buf with room to double, bounded by limit.
func grow(buf []byte, limit int) []byte {
	c := min(max(2*cap(buf), minBufferSize), max(limit, len(buf)+1))
	grown := make([]byte, len(buf), c)
	copy(grown, buf)
	return grown
}
