package repl

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// SnapshotStreamer is implemented by a state machine whose snapshots are
// too large to travel inside one message (the data store: a Pebble
// checkpoint). Its Snapshot returns only a small descriptor, which Raft
// stores with the log and sends in MsgSnap; a transport that streams
// (both of this package's do) writes the snapshot's bytes after the
// message with WriteSnapshot on the sender, and on the receiver hands
// them to ReadSnapshot before it delivers the message, so Raft sees the
// MsgSnap only once the member holds the snapshot ("Snapshot held before
// stepped"). Restore then installs what ReadSnapshot stored; a member
// killed during the install finds it again at restart (the log's
// snapshot is newer than the state machine's Applied) and restores again.
type SnapshotStreamer interface {
	// WriteSnapshot writes the snapshot that descriptor names to w. It runs
	// on a transport goroutine, never on the node loop.
	WriteSnapshot(descriptor []byte, w io.Writer) error
	// ReadSnapshot reads a stream WriteSnapshot wrote for descriptor and
	// stores it durably where Restore(index, descriptor) finds it. An
	// error drops the message (the leader sends the snapshot again).
	ReadSnapshot(descriptor []byte, r io.Reader) error
}

// streaming is implemented by transports that stream snapshots; NewNode
// hands them the state machine when it is a SnapshotStreamer.
type streaming interface {
	SetSnapshotStreamer(SnapshotStreamer)
}

// maxChunk bounds one chunk of a streamed snapshot.
const maxChunk = 1 << 20

// chunkWriter frames a snapshot stream as chunks of a 4-byte big-endian
// length and the bytes; Close writes the empty chunk that ends it.
type chunkWriter struct{ w io.Writer }

func (c chunkWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		n := min(len(p), maxChunk)
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], uint32(n))
		if _, err := c.w.Write(hdr[:]); err != nil {
			return written, err
		}
		if _, err := c.w.Write(p[:n]); err != nil {
			return written, err
		}
		written += n
		p = p[n:]
	}
	return written, nil
}

func (c chunkWriter) Close() error {
	_, err := c.w.Write([]byte{0, 0, 0, 0})
	return err
}

// chunkReader reads what a chunkWriter wrote, up to the empty chunk.
type chunkReader struct {
	r    *bufio.Reader
	left int
	done bool
}

func (c *chunkReader) Read(p []byte) (int, error) {
	for c.left == 0 {
		if c.done {
			return 0, io.EOF
		}
		var hdr [4]byte
		if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
			return 0, unexpected(err)
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n > maxChunk {
			return 0, fmt.Errorf("repl: snapshot chunk of %d bytes", n)
		}
		if n == 0 {
			c.done = true
		}
		c.left = int(n)
	}
	n, err := c.r.Read(p[:min(len(p), c.left)])
	c.left -= n
	return n, unexpected(err)
}

// drain reads the stream to its end, so the connection's next frame is
// where the reader stands.
func (c *chunkReader) drain() error {
	_, err := io.Copy(io.Discard, c)
	return err
}

func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
