package wire

import (
	"encoding/binary"
	"hash/crc32"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// MsgFlags is an OP_MSG's flagBits. Bits 0–15 are required: a receiver must
// understand every one that is set. Bits 16–31 are optional: a receiver
// ignores those it does not know.
type MsgFlags uint32

// The defined OP_MSG flag bits.
const (
	// FlagChecksumPresent: the message ends with a CRC-32C of everything
	// before it. [EndMsg] appends one when this bit is set.
	FlagChecksumPresent MsgFlags = 1 << 0
	// FlagMoreToCome: on a request, the client wants no reply; on a reply,
	// another reply follows without a request (exhaust).
	FlagMoreToCome MsgFlags = 1 << 1
	// FlagExhaustAllowed: the client accepts several replies (each with
	// FlagMoreToCome) to this request.
	FlagExhaustAllowed MsgFlags = 1 << 16
)

// knownRequiredFlags are the required bits (0–15) this package understands.
const knownRequiredFlags = FlagChecksumPresent | FlagMoreToCome

const requiredFlagsMask MsgFlags = 0xFFFF

// SectionKind is the first byte of an OP_MSG section, naming its layout.
type SectionKind byte

// The section kinds of OP_MSG.
const (
	// SectionBody is followed by one document: the command or reply.
	SectionBody SectionKind = 0
	// SectionSequence is followed by an int32 size, a cstring identifier and
	// zero or more documents: a command argument pulled out of the body.
	SectionSequence SectionKind = 1
)

// crc32c is the Castagnoli table, which the OP_MSG checksum uses (and which
// hash/crc32 accelerates in hardware).
var crc32c = crc32.MakeTable(crc32.Castagnoli)

// checksumSize is the size of the optional trailing CRC-32C.
const checksumSize = 4

// minMsgSize is the smallest OP_MSG: header, flags, and a body section
// holding an empty document.
const minMsgSize = HeaderSize + 4 + 1 + minDocumentSize

// Msg is a decoded OP_MSG.
type Msg struct {
	// Flags are the message's flagBits, optional bits included.
	Flags MsgFlags
	// Body is the kind-0 section's document: the command, or the reply.
	Body bsoncore.Document
	// BodyElements are Body's top-level elements in order (each a type,
	// a name and a value), split by the walk that validated Body; they
	// alias Body.
	BodyElements []bsoncore.Element
	// Sequences are the kind-1 sections in the order received.
	Sequences []Sequence
}

// Sequence is a kind-1 section: a command argument sent as a run of
// documents (insert's "documents", update's "updates", delete's "deletes").
type Sequence struct {
	// Identifier names the command argument the documents belong to.
	Identifier string
	// Documents are the sequence's documents, in order.
	Documents []bsoncore.Document
}

// Sequence returns the documents of the kind-1 section named identifier.
// Identifiers are unique within a message (the reader enforces it).
func (m *Msg) Sequence(identifier string) ([]bsoncore.Document, bool) {
	for i := range m.Sequences {
		if m.Sequences[i].Identifier == identifier {
			return m.Sequences[i].Documents, true
		}
	}
	return nil, false
}

func (m *Msg) hasSequence(id []byte) bool {
	for i := range m.Sequences {
		if m.Sequences[i].Identifier == string(id) { // no allocation: a comparison
			return true
		}
	}
	return false
}

// parseMsg decodes the OP_MSG in b (the whole message, header included) into
// m, reusing m's slices.
func parseMsg(b []byte, m *Msg) error {
	if len(b) < minMsgSize {
		return newError(ErrMalformed, "OP_MSG of %d bytes is shorter than the minimum %d", len(b), minMsgSize)
	}
	m.Flags = MsgFlags(binary.LittleEndian.Uint32(b[HeaderSize:]))
	if unknown := m.Flags & requiredFlagsMask &^ knownRequiredFlags; unknown != 0 {
		return newError(ErrRequiredFlags, "flagBits 0x%08x", uint32(m.Flags))
	}
	end := len(b)
	if m.Flags&FlagChecksumPresent != 0 {
		end -= checksumSize
		if err := verifyChecksum(b); err != nil {
			return err
		}
	}
	return parseSections(b[HeaderSize+4:end], m)
}

// verifyChecksum checks the trailing CRC-32C, which covers every byte of the
// message before it, header included.
func verifyChecksum(b []byte) error {
	if len(b) < minMsgSize+checksumSize {
		return newError(ErrMalformed, "OP_MSG of %d bytes has no room for a checksum", len(b))
	}
	body, tail := b[:len(b)-checksumSize], b[len(b)-checksumSize:]
	want := binary.LittleEndian.Uint32(tail)
	if got := crc32.Checksum(body, crc32c); got != want {
		return newError(ErrChecksum, "message says 0x%08x, bytes give 0x%08x", want, got)
	}
	return nil
}

// parseSections decodes the sections in b, which must exactly fill it.
func parseSections(b []byte, m *Msg) error {
	m.Body, m.BodyElements = nil, m.BodyElements[:0]
	m.Sequences = m.Sequences[:0]
	for len(b) > 0 {
		kind := SectionKind(b[0])
		var err error
		switch kind {
		case SectionBody:
			if m.Body != nil {
				return newError(ErrBodySection, "a second body section")
			}
			m.Body, b, err = readSplitDocument(b[1:], &m.BodyElements)
		case SectionSequence:
			b, err = parseSequence(b[1:], m)
		default:
			return newError(ErrSectionKind, "section kind %d", kind)
		}
		if err != nil {
			return err
		}
	}
	if m.Body == nil {
		return newError(ErrBodySection, "no body section")
	}
	return nil
}

// parseSequence decodes the kind-1 section at the start of b (after its kind
// byte), appends it to m.Sequences, and returns the bytes after it.
func parseSequence(b []byte, m *Msg) ([]byte, error) {
	size, _, ok := readInt32(b)
	if !ok || size < 4+1 || int64(size) > int64(len(b)) {
		return nil, newError(ErrMalformed, "document sequence claims %d bytes, %d left", size, len(b))
	}
	section, rest := b[4:size], b[size:]
	id, docs, ok := cstring(section)
	if !ok {
		return nil, newError(ErrMalformed, "document sequence identifier not terminated")
	}
	if len(id) == 0 {
		return nil, newError(ErrMalformed, "document sequence with an empty identifier")
	}
	if m.hasSequence(id) {
		return nil, newError(ErrMalformed, "two document sequences named %q", id)
	}
	seq := m.nextSequence()
	seq.Identifier = identifierString(id)
	for len(docs) > 0 {
		var doc bsoncore.Document
		var err error
		if doc, docs, err = readDocument(docs); err != nil {
			return nil, err
		}
		seq.Documents = append(seq.Documents, doc)
	}
	return rest, nil
}

// nextSequence appends an empty Sequence to m, reusing the documents slice
// a previous message left in that slot so that a warm reader allocates
// nothing for sequences of a familiar size.
func (m *Msg) nextSequence() *Sequence {
	n := len(m.Sequences)
	if n < cap(m.Sequences) {
		m.Sequences = m.Sequences[:n+1]
	} else {
		m.Sequences = append(m.Sequences, Sequence{})
	}
	seq := &m.Sequences[n]
	seq.Documents = seq.Documents[:0]
	return seq
}

// identifierString converts a sequence identifier to a string without
// allocating for the identifiers drivers actually send.
func identifierString(id []byte) string {
	switch string(id) { // the compiler does not allocate for a switch on string(bytes)
	case "documents":
		return "documents"
	case "updates":
		return "updates"
	case "deletes":
		return "deletes"
	case "ops":
		return "ops"
	case "nsInfo":
		return "nsInfo"
	}
	return string(id)
}

// BeginMsg appends the header and flagBits of an OP_MSG to dst and returns
// the offset where the message starts, for [EndMsg]. Sections follow: with
// [AppendBodySection] and [AppendSequenceSection], or, to build the body in
// place without copying it, by appending byte(SectionBody) and then the
// document's bytes directly.
func BeginMsg(dst []byte, requestID, responseTo int32, flags MsgFlags) (int, []byte) {
	start, dst := beginMessage(dst, requestID, responseTo, OpMsg)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(flags))
	return start, dst
}

// AppendBodySection appends a kind-0 section holding body.
func AppendBodySection(dst []byte, body bsoncore.Document) []byte {
	dst = append(dst, byte(SectionBody))
	return append(dst, body...)
}

// AppendSequenceSection appends a kind-1 section: identifier and documents.
func AppendSequenceSection(dst []byte, identifier string, docs []bsoncore.Document) []byte {
	dst = append(dst, byte(SectionSequence))
	sizeAt := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, 0)
	dst = append(dst, identifier...)
	dst = append(dst, 0)
	for _, doc := range docs {
		dst = append(dst, doc...)
	}
	binary.LittleEndian.PutUint32(dst[sizeAt:], uint32(len(dst)-sizeAt))
	return dst
}

// EndMsg completes the OP_MSG that [BeginMsg] started at start: it patches
// in the message length and, when the flags ask for it, appends the CRC-32C.
func EndMsg(dst []byte, start int) []byte {
	flags := MsgFlags(binary.LittleEndian.Uint32(dst[start+HeaderSize:]))
	if flags&FlagChecksumPresent == 0 {
		return endMessage(dst, start)
	}
	// The checksum covers the length field, so the length must count the
	// checksum before the checksum is computed.
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(dst)-start+checksumSize))
	sum := crc32.Checksum(dst[start:], crc32c)
	return binary.LittleEndian.AppendUint32(dst, sum)
}

// AppendMsg appends an OP_MSG whose only section is body: the shape of every
// reply. Set [FlagChecksumPresent] in flags to append a checksum.
func AppendMsg(dst []byte, requestID, responseTo int32, flags MsgFlags, body bsoncore.Document) []byte {
	start, dst := BeginMsg(dst, requestID, responseTo, flags)
	dst = AppendBodySection(dst, body)
	return EndMsg(dst, start)
}
