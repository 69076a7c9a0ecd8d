// Package wire frames the MongoDB wire protocol: it turns bytes into messages
// and messages into bytes, and knows nothing of commands.
//
// # What it speaks
//
//   - OP_MSG (2013), the protocol of every modern driver: flag bits, one body
//     section (kind 0), any number of document sequences (kind 1), and the
//     optional CRC-32C checksum.
//   - OP_QUERY (2004) and OP_REPLY (1), only so that the legacy handshake
//     (an isMaster sent to "admin.$cmd") can be read and answered.
//   - OP_COMPRESSED (2012) wrapping any of the above, with the noop, snappy,
//     zlib and zstd compressors.
//
// A server reads with a [Reader] (one per connection) and answers with the
// append functions ([AppendMsg], or [BeginMsg], [AppendBodySection],
// [AppendSequenceSection] and [EndMsg] to build a reply in place;
// [AppendReply]; [AppendCompressed]) into a buffer it owns and reuses.
//
// # Invariants
//
// No allocation before validation. A length taken from the wire (the message
// length, OP_COMPRESSED's uncompressedSize) is checked against the minimum
// and the caller's maximum before anything is sized by it, so a header that
// claims 2 GiB, or a negative length, is an error and never an allocation.
// (TestNoAllocationBeforeValidation)
//
// Memory follows bytes received. Within the maximum, the read buffer grows
// as bytes actually arrive, so a peer that claims a large message and sends
// a trickle costs what it sent, not what it claimed. A decompressed size is
// believed only as far as it is checked — against the maximum, and against
// the most the compressed bytes could expand to — and no decompressor is
// allowed to write past it, so a zip bomb stops at the declared size.
// (TestBombMemory, TestLargeMessageBufferReleased)
//
// Zero copy: documents alias the buffer until the next read. The
// bsoncore.Document values of a [Message] point into the [Reader]'s buffer;
// they are valid until the next call to [Reader.ReadMessage], which reuses it.
// Copy what must outlive the request. (TestDocumentsAliasBuffer) So do an
// OP_MSG body's top-level elements (Msg.BodyElements), which the walk that
// validates the body splits, so that the command layer does not split it
// again. (TestBodyElements)
//
// Every document that leaves the package is well formed. Each document's
// length is checked against the section (or message) holding it, and its
// elements are walked recursively (to a depth of [MaxDocumentDepth]) so that
// later code can read fields without bounds surprises. UTF-8, field-name rules
// and the 16 MiB / 100-level limits for stored documents belong to the layers
// above. (TestCheckDocumentCorrupt, FuzzReadMessage)
//
// No allocation on the hot path. Reading an uncompressed OP_MSG into a warm
// [Reader] and appending a reply into a warm buffer allocate nothing.
// (TestReadAllocations, TestAppendAllocations)
//
// Errors say whether the connection survives. Every decoding failure is an
// [*Error] naming a package sentinel (errors.Is works) and, once the header
// was read, the request it belongs to. [IsFatal] tells the server whether to
// close the connection (the stream can no longer be trusted, or the
// specification says so) or to answer the request with an error and go on.
package wire
