package wire

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Query is a decoded OP_QUERY. Cairn reads it only for the legacy handshake:
// a driver that may be talking to an old server opens the connection with an
// isMaster (or hello) OP_QUERY to "admin.$cmd", answered by an OP_REPLY.
type Query struct {
	// Flags are the OP_QUERY flag bits (tailable, secondaryOk, exhaust, …).
	Flags int32
	// FullCollectionName is "<db>.<collection>"; "admin.$cmd" for commands.
	FullCollectionName string
	// NumberToSkip is how many results a legacy query skips; 0 for a command.
	NumberToSkip int32
	// NumberToReturn is a legacy query's batch size; a command sends -1 or 1.
	NumberToReturn int32
	// Query is the query, or the command document.
	Query bsoncore.Document
	// ReturnFieldsSelector is the optional projection; nil when absent.
	ReturnFieldsSelector bsoncore.Document
}

// minQuerySize is the smallest OP_QUERY: header, flags, an empty name, skip,
// return and an empty query document.
const minQuerySize = HeaderSize + 4 + 1 + 4 + 4 + minDocumentSize

// parseQuery decodes the OP_QUERY in b (the whole message, header included).
func parseQuery(b []byte, q *Query) error {
	if len(b) < minQuerySize {
		return newError(ErrMalformed, "OP_QUERY of %d bytes is shorter than the minimum %d", len(b), minQuerySize)
	}
	rest := b[HeaderSize:]
	q.Flags, rest, _ = readInt32(rest)
	name, rest, ok := cstring(rest)
	if !ok {
		return newError(ErrMalformed, "fullCollectionName not terminated")
	}
	q.FullCollectionName = namespaceString(name)
	var ok1, ok2 bool
	q.NumberToSkip, rest, ok1 = readInt32(rest)
	q.NumberToReturn, rest, ok2 = readInt32(rest)
	if !ok1 || !ok2 {
		return newError(ErrMalformed, "OP_QUERY cut short after fullCollectionName")
	}
	var err error
	if q.Query, rest, err = readDocument(rest); err != nil {
		return err
	}
	q.ReturnFieldsSelector = nil
	if len(rest) > 0 {
		if q.ReturnFieldsSelector, rest, err = readDocument(rest); err != nil {
			return err
		}
	}
	if len(rest) > 0 {
		return newError(ErrMalformed, "%d bytes after returnFieldsSelector", len(rest))
	}
	return nil
}

// namespaceString converts a namespace to a string, without allocating for
// the one namespace the handshake uses.
func namespaceString(name []byte) string {
	if string(name) == "admin.$cmd" {
		return "admin.$cmd"
	}
	return string(name)
}

// AppendQuery appends q as an OP_QUERY. A server never sends one; it is here
// for clients and tests that speak the legacy handshake.
func AppendQuery(dst []byte, requestID int32, q *Query) []byte {
	start, dst := beginMessage(dst, requestID, 0, OpQuery)
	dst = appendInt32(dst, q.Flags)
	dst = append(dst, q.FullCollectionName...)
	dst = append(dst, 0)
	dst = appendInt32(dst, q.NumberToSkip)
	dst = appendInt32(dst, q.NumberToReturn)
	dst = append(dst, q.Query...)
	dst = append(dst, q.ReturnFieldsSelector...)
	return endMessage(dst, start)
}
