package wire

import (
	"errors"
	"fmt"
	"io"
)

// Sentinels naming what went wrong. Errors returned by this package wrap
// exactly one of them, so callers branch with errors.Is and never on message
// text.
var (
	// ErrTruncated: the stream ended inside a message. It wraps
	// io.ErrUnexpectedEOF, so errors.Is matches either.
	ErrTruncated = fmt.Errorf("wire: message cut short: %w", io.ErrUnexpectedEOF)
	// ErrMessageTooLarge: the length header exceeds the caller's maximum.
	ErrMessageTooLarge = errors.New("wire: message too large")
	// ErrMessageTooSmall: the length header is smaller than a header.
	// Lengths are int32, so this includes negative ones: a header claiming
	// 2 GiB or more reads as negative.
	ErrMessageTooSmall = errors.New("wire: message length smaller than header")
	// ErrUnsupportedOpCode: the opcode is not one this package reads.
	ErrUnsupportedOpCode = errors.New("wire: unsupported opcode")
	// ErrMalformed: a field or section runs past its container, a count
	// disagrees with what follows, or bytes are left over.
	ErrMalformed = errors.New("wire: malformed message")
	// ErrInvalidDocument: a BSON document is not well formed.
	ErrInvalidDocument = errors.New("wire: invalid BSON document")
	// ErrChecksum: an OP_MSG's CRC-32C does not match its bytes.
	ErrChecksum = errors.New("wire: checksum mismatch")
	// ErrRequiredFlags: an OP_MSG sets a required flag bit (0–15) that is
	// not defined.
	ErrRequiredFlags = errors.New("wire: unknown required flag bits")
	// ErrSectionKind: an OP_MSG section has a kind other than 0 or 1.
	ErrSectionKind = errors.New("wire: unknown section kind")
	// ErrBodySection: an OP_MSG has no body section, or more than one.
	ErrBodySection = errors.New("wire: OP_MSG needs exactly one body section")
	// ErrCompressor: an unknown compressor id or name, or an invalid level.
	ErrCompressor = errors.New("wire: unknown compressor")
	// ErrDecompress: compressed bytes could not be decompressed.
	ErrDecompress = errors.New("wire: decompression failed")
	// ErrUncompressedSize: an OP_COMPRESSED's uncompressedSize is out of
	// bounds or disagrees with what its payload decompresses to.
	ErrUncompressedSize = errors.New("wire: uncompressed size mismatch")
)

// Error describes a message that could not be read or decoded.
type Error struct {
	// Err is the sentinel this error wraps.
	Err error
	// Header is the message's header; meaningful only when HeaderKnown.
	// For a compressed message it is the OP_COMPRESSED header if
	// decompressing failed, and the wrapped message's header after.
	Header Header
	// HeaderKnown reports whether the header was read, so that Header's
	// RequestID identifies the request to answer (or to log).
	HeaderKnown bool
	// Fatal reports that the connection must be closed: either the byte
	// stream can no longer be trusted to be at a message boundary, or the
	// specification demands it. Otherwise the whole message was consumed and
	// the server may answer Header.RequestID with an error and read on.
	Fatal bool
	// Detail adds what was found, for logs.
	Detail string
}

// Error formats the sentinel, the request it belongs to, and the detail.
func (e *Error) Error() string {
	msg := e.Err.Error()
	if e.HeaderKnown {
		msg = fmt.Sprintf("%s (requestID %d, %v)", msg, e.Header.RequestID, e.Header.OpCode)
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Unwrap returns the sentinel, so errors.Is(err, ErrChecksum) works.
func (e *Error) Unwrap() error { return e.Err }

// IsFatal reports whether err means the connection must be closed. It is
// true for every error except an [*Error] whose Fatal is false, so I/O errors
// and io.EOF (the peer hung up between messages) are fatal too.
func IsFatal(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Fatal
	}
	return err != nil
}

// newError builds an *Error of the given kind. Whether it is fatal follows
// from the kind alone, so that the policy lives in one place (fatalKind).
func newError(kind error, format string, args ...any) *Error {
	detail := format
	if len(args) > 0 {
		detail = fmt.Sprintf(format, args...)
	}
	return &Error{Err: kind, Fatal: fatalKind(kind), Detail: detail}
}

// fatalKind is the connection policy. Framing errors are fatal because the
// next message boundary is unknown; a bad checksum is fatal because the
// length that framed the message is as suspect as the rest of it; an unknown
// section kind is fatal because the OP_MSG specification says the socket
// MUST be closed. Everything else happened inside a correctly framed message
// that was read to its end, so the server can answer it and carry on.
func fatalKind(kind error) bool {
	switch kind {
	case ErrMessageTooLarge, ErrMessageTooSmall, ErrChecksum, ErrSectionKind, ErrTruncated:
		return true
	}
	return false
}
