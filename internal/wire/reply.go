package wire

import (
	"encoding/binary"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// ReplyFlags are an OP_REPLY's responseFlags.
type ReplyFlags int32

// The OP_REPLY response flags a command reply can carry.
const (
	// ReplyCursorNotFound: a getMore named a cursor that does not exist.
	ReplyCursorNotFound ReplyFlags = 1 << 0
	// ReplyQueryFailure: the single document returned is an error.
	ReplyQueryFailure ReplyFlags = 1 << 1
	// ReplyAwaitCapable: the server supports awaitData (always set by
	// MongoDB since 1.6).
	ReplyAwaitCapable ReplyFlags = 1 << 3
)

// Reply is a decoded OP_REPLY, the answer to an OP_QUERY.
type Reply struct {
	// Flags are the responseFlags.
	Flags ReplyFlags
	// CursorID is the cursor to continue with; 0 for a command reply.
	CursorID int64
	// StartingFrom is the position of the first document in the cursor.
	StartingFrom int32
	// Documents are the returned documents; their count is numberReturned
	// on the wire.
	Documents []bsoncore.Document
}

// replyFixedSize is the size of OP_REPLY's fields before its documents.
const replyFixedSize = 4 + 8 + 4 + 4

// parseReply decodes the OP_REPLY in b (the whole message, header included)
// into r, reusing r.Documents.
func parseReply(b []byte, r *Reply) error {
	if len(b) < HeaderSize+replyFixedSize {
		return newError(ErrMalformed, "OP_REPLY of %d bytes is shorter than the minimum %d", len(b), HeaderSize+replyFixedSize)
	}
	rest := b[HeaderSize:]
	r.Flags = ReplyFlags(binary.LittleEndian.Uint32(rest))
	r.CursorID = int64(binary.LittleEndian.Uint64(rest[4:]))
	r.StartingFrom = int32(binary.LittleEndian.Uint32(rest[12:]))
	numberReturned := int32(binary.LittleEndian.Uint32(rest[16:]))
	rest = rest[replyFixedSize:]
	// Each document takes at least minDocumentSize bytes, so a count the
	// bytes cannot hold is refused before it sizes anything.
	if numberReturned < 0 || int64(numberReturned) > int64(len(rest)/minDocumentSize) {
		return newError(ErrMalformed, "numberReturned %d does not fit in %d bytes", numberReturned, len(rest))
	}
	r.Documents = r.Documents[:0]
	for len(rest) > 0 {
		var doc bsoncore.Document
		var err error
		if doc, rest, err = readDocument(rest); err != nil {
			return err
		}
		r.Documents = append(r.Documents, doc)
	}
	if len(r.Documents) != int(numberReturned) {
		return newError(ErrMalformed, "numberReturned %d but %d documents", numberReturned, len(r.Documents))
	}
	return nil
}

// AppendReply appends r as an OP_REPLY answering the request responseTo;
// numberReturned is len(r.Documents).
func AppendReply(dst []byte, requestID, responseTo int32, r *Reply) []byte {
	start, dst := beginMessage(dst, requestID, responseTo, OpReply)
	dst = appendInt32(dst, int32(r.Flags))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(r.CursorID))
	dst = appendInt32(dst, r.StartingFrom)
	dst = appendInt32(dst, int32(len(r.Documents)))
	for _, doc := range r.Documents {
		dst = append(dst, doc...)
	}
	return endMessage(dst, start)
}
