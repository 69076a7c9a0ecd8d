package wire

import (
	"bytes"
	"encoding/binary"
	"strconv"
)

// HeaderSize is the size of the standard message header that starts every
// message: messageLength, requestID, responseTo and opCode, each an int32.
const HeaderSize = 16

// DefaultMaxMessageSize is MongoDB's maxMessageSizeBytes: the largest message,
// header included, that a server accepts and advertises in hello.
const DefaultMaxMessageSize = 48_000_000

// OpCode is the kind of a message, from its header.
type OpCode int32

// The opcodes this package reads and writes. The other legacy opcodes
// (OP_INSERT, OP_GET_MORE, …) were removed in MongoDB 5.1 and are reported
// as ErrUnsupportedOpCode.
const (
	OpReply      OpCode = 1
	OpQuery      OpCode = 2004
	OpCompressed OpCode = 2012
	OpMsg        OpCode = 2013
)

// String returns the protocol's name for the opcode, as in MongoDB's logs.
func (c OpCode) String() string {
	switch c {
	case OpReply:
		return "OP_REPLY"
	case OpQuery:
		return "OP_QUERY"
	case OpCompressed:
		return "OP_COMPRESSED"
	case OpMsg:
		return "OP_MSG"
	}
	return "opcode(" + strconv.Itoa(int(c)) + ")"
}

// Header is the standard message header.
type Header struct {
	// MessageLength is the size of the whole message, header included.
	MessageLength int32
	// RequestID identifies the message; a reply names it in ResponseTo.
	RequestID int32
	// ResponseTo is the RequestID of the request this message answers.
	ResponseTo int32
	// OpCode is the message's kind.
	OpCode OpCode
}

func parseHeader(b []byte) Header {
	return Header{
		MessageLength: int32(binary.LittleEndian.Uint32(b[0:])),
		RequestID:     int32(binary.LittleEndian.Uint32(b[4:])),
		ResponseTo:    int32(binary.LittleEndian.Uint32(b[8:])),
		OpCode:        OpCode(binary.LittleEndian.Uint32(b[12:])),
	}
}

// beginMessage appends a header whose length is a placeholder and returns
// where the message starts; endMessage patches the length in once the body
// is known, which is what lets replies be built in one pass.
func beginMessage(dst []byte, requestID, responseTo int32, op OpCode) (int, []byte) {
	start := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, 0)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(requestID))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(responseTo))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(op))
	return start, dst
}

func endMessage(dst []byte, start int) []byte {
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(dst)-start))
	return dst
}

func appendInt32(dst []byte, v int32) []byte {
	return binary.LittleEndian.AppendUint32(dst, uint32(v))
}

// cstring returns the bytes of the NUL-terminated string at the start of b
// and the bytes after its terminator.
func cstring(b []byte) (s, rest []byte, ok bool) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return nil, b, false
	}
	return b[:i], b[i+1:], true
}

// readInt32 reads a little-endian int32 from the start of b.
func readInt32(b []byte) (int32, []byte, bool) {
	if len(b) < 4 {
		return 0, b, false
	}
	return int32(binary.LittleEndian.Uint32(b)), b[4:], true
}
