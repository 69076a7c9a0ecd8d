package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"sync"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
)

// Compressor identifies an OP_COMPRESSED compression algorithm by its wire id.
type Compressor uint8

// The compressors of the wire compression specification, with their ids.
const (
	// CompressorNoop sends the message as is; MongoDB uses it for testing.
	CompressorNoop Compressor = 0
	// CompressorSnappy is Snappy's block format.
	CompressorSnappy Compressor = 1
	// CompressorZlib is a zlib stream (RFC 1950).
	CompressorZlib Compressor = 2
	// CompressorZstd is a Zstandard frame.
	CompressorZstd Compressor = 3
)

// String returns the name a client uses for the compressor in hello's
// compression list ("snappy", "zlib", "zstd", "noop").
func (c Compressor) String() string {
	switch c {
	case CompressorNoop:
		return "noop"
	case CompressorSnappy:
		return "snappy"
	case CompressorZlib:
		return "zlib"
	case CompressorZstd:
		return "zstd"
	}
	return "compressor(" + strconv.Itoa(int(c)) + ")"
}

// CompressorByName returns the compressor a hello compression list names.
// Names are case-sensitive, as MongoDB's are.
func CompressorByName(name string) (Compressor, bool) {
	for _, c := range []Compressor{CompressorNoop, CompressorSnappy, CompressorZlib, CompressorZstd} {
		if c.String() == name {
			return c, true
		}
	}
	return 0, false
}

// DefaultZlibLevel asks zlib for its default level (6), as zlibCompressionLevel -1 does.
const DefaultZlibLevel = -1

// compressedFixedSize is OP_COMPRESSED's fields between the header and the
// compressed bytes: originalOpcode, uncompressedSize and compressorId.
const compressedFixedSize = 4 + 4 + 1

// snappyMaxExpansion bounds how many bytes one byte of Snappy input can
// become: the densest element is a 3-byte copy of up to 64 bytes. A payload
// whose declared size exceeds this is a lie, refused before allocating.
const snappyMaxExpansion = 22

// zstdMaxExpansion bounds the same for Zstandard: a block adds at most
// 128 KiB of output and takes at least 4 bytes (an RLE block).
const zstdMaxExpansion = 128 << 10 / 4

// zstdMaxWindow is the largest window a frame may declare: libzstd's own
// default limit for decompression (windowLog 27).
const zstdMaxWindow = 1 << 27

// decompress inflates the OP_COMPRESSED message b into buf and returns the
// wrapped message with its header rebuilt: the outer requestID and
// responseTo, originalOpcode, and a length of HeaderSize+uncompressedSize.
// Rebuilding the header is what makes an OP_MSG checksum, computed by the
// sender over the uncompressed message, verifiable. maxSize bounds the
// rebuilt message.
func decompress(buf, b []byte, maxSize int) ([]byte, Compressor, error) {
	if len(b) < HeaderSize+compressedFixedSize {
		return buf, 0, newError(ErrMalformed, "OP_COMPRESSED of %d bytes is shorter than the minimum %d", len(b), HeaderSize+compressedFixedSize)
	}
	original := OpCode(binary.LittleEndian.Uint32(b[HeaderSize:]))
	size := int32(binary.LittleEndian.Uint32(b[HeaderSize+4:]))
	id := Compressor(b[HeaderSize+8])
	payload := b[HeaderSize+compressedFixedSize:]
	if original == OpCompressed {
		return buf, id, newError(ErrMalformed, "OP_COMPRESSED wrapping OP_COMPRESSED")
	}
	if size < 0 || int64(size) > int64(maxSize)-HeaderSize {
		return buf, id, newError(ErrUncompressedSize, "uncompressedSize %d outside 0..%d", size, maxSize-HeaderSize)
	}
	total := HeaderSize + int(size)
	if cap(buf) > maxRetainedBuffer && total <= maxRetainedBuffer {
		buf = nil // let a rare large message's buffer go
	}
	buf = buf[:0]
	buf = beginInflated(buf, b, original, total)
	var err error
	switch id {
	case CompressorNoop:
		buf, err = inflateNoop(buf, payload, total)
	case CompressorSnappy:
		buf, err = inflateSnappy(buf, payload, total)
	case CompressorZlib:
		buf, err = inflateZlib(buf, payload, total)
	case CompressorZstd:
		buf, err = inflateZstd(buf, payload, total)
	default:
		err = newError(ErrCompressor, "compressorId %d", id)
	}
	return buf, id, err
}

// beginInflated writes the rebuilt header at the start of buf.
func beginInflated(buf, b []byte, original OpCode, total int) []byte {
	if cap(buf) < HeaderSize {
		buf = make([]byte, 0, minBufferSize)
	}
	buf = binary.LittleEndian.AppendUint32(buf, uint32(total))
	buf = append(buf, b[4:12]...) // requestID and responseTo
	return binary.LittleEndian.AppendUint32(buf, uint32(original))
}

func inflateNoop(buf, payload []byte, total int) ([]byte, error) {
	if len(payload) != total-HeaderSize {
		return buf, sizeMismatch(len(payload), total)
	}
	return append(buf, payload...), nil
}

func inflateSnappy(buf, payload []byte, total int) ([]byte, error) {
	n, err := snappy.DecodedLen(payload)
	if err != nil {
		return buf, newError(ErrDecompress, "snappy: %v", err)
	}
	if n != total-HeaderSize {
		return buf, sizeMismatch(n, total)
	}
	if int64(n) > int64(len(payload))*snappyMaxExpansion {
		return buf, newError(ErrDecompress, "snappy: %d bytes cannot expand to %d", len(payload), n)
	}
	buf = slices.Grow(buf, n)
	out, err := snappy.Decode(buf[HeaderSize:total], payload)
	if err != nil {
		return buf, newError(ErrDecompress, "snappy: %v", err)
	}
	return buf[:HeaderSize+len(out)], nil
}

// zlibInflater is a pooled zlib reader together with the bytes.Reader it
// reads from, so that pooling it retains nothing of a connection's buffers.
type zlibInflater struct {
	src bytes.Reader
	zr  io.ReadCloser
}

var zlibInflaters = sync.Pool{New: func() any { return new(zlibInflater) }}

func inflateZlib(buf, payload []byte, total int) ([]byte, error) {
	z := zlibInflaters.Get().(*zlibInflater)
	defer zlibInflaters.Put(z)
	defer z.src.Reset(nil)
	z.src.Reset(payload)
	var err error
	if z.zr == nil {
		z.zr, err = zlib.NewReader(&z.src)
	} else {
		err = z.zr.(zlib.Resetter).Reset(&z.src, nil)
	}
	if err != nil {
		return buf, newError(ErrDecompress, "zlib: %v", err)
	}
	if buf, err = inflate(buf, z.zr, total, "zlib"); err != nil {
		return buf, err
	}
	if z.src.Len() > 0 {
		return buf, newError(ErrDecompress, "zlib: %d bytes after the stream", z.src.Len())
	}
	return buf, nil
}

// zstdDecoder is shared: DecodeAll is safe for concurrent use. It decodes
// straight into the caller's buffer, which serves as the history, so no
// window-sized ring is allocated whatever window a frame declares; and with
// the cap limit it never writes past the buffer's capacity, which
// inflateZstd sets to the declared size.
var zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil,
		zstd.WithDecodeAllCapLimit(true),
		zstd.WithDecoderMaxWindow(zstdMaxWindow),
		zstd.WithDecoderMaxMemory(math.MaxInt32))
})

func inflateZstd(buf, payload []byte, total int) ([]byte, error) {
	if int64(total-HeaderSize) > int64(len(payload))*zstdMaxExpansion {
		return buf, newError(ErrDecompress, "zstd: %d bytes cannot expand to %d", len(payload), total-HeaderSize)
	}
	dec, err := zstdDecoder()
	if err != nil {
		return buf, newError(ErrDecompress, "zstd: %v", err)
	}
	buf = slices.Grow(buf, total-len(buf))
	out, err := dec.DecodeAll(payload, buf[:HeaderSize:total])
	switch {
	case errors.Is(err, zstd.ErrDecoderSizeExceeded):
		return buf, newError(ErrUncompressedSize, "payload inflates beyond uncompressedSize %d", total-HeaderSize)
	case err != nil:
		return buf, newError(ErrDecompress, "zstd: %v", err)
	case len(out) != total:
		return buf, sizeMismatch(len(out)-HeaderSize, total)
	}
	if &out[0] != &buf[0] {
		return out, nil // the decoder reallocated after all; out is still right
	}
	// out is buf's memory, capped at total; hand back buf so that the
	// Reader keeps all of its capacity.
	return buf[:total], nil
}

// inflate reads exactly total-len(buf) bytes of decompressed output from r
// into buf, and then makes sure the stream ends there. It never asks r for
// more than one byte beyond total, which is what defuses a zip bomb: the
// output stops at the declared size, and the declared size was checked
// against the maximum.
func inflate(buf []byte, r io.Reader, total int, name string) ([]byte, error) {
	buf, err := fill(buf, r, total, total)
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return buf, sizeMismatch(len(buf)-HeaderSize, total)
		}
		return buf, newError(ErrDecompress, "%s: %v", name, err)
	}
	var probe [1]byte
	switch n, err := io.ReadFull(r, probe[:]); {
	case n > 0:
		return buf, newError(ErrUncompressedSize, "payload inflates beyond uncompressedSize %d", total-HeaderSize)
	case err != io.EOF:
		return buf, newError(ErrDecompress, "%s: %v", name, err)
	}
	return buf, nil
}

func sizeMismatch(got, total int) error {
	return newError(ErrUncompressedSize, "payload holds %d bytes, uncompressedSize says %d", got, total-HeaderSize)
}

// AppendCompressed appends msg, one complete encoded message (as built by
// [AppendMsg] or [AppendReply]), wrapped in an OP_COMPRESSED with the same
// requestID and responseTo. zlibLevel (-1 to 9) applies to zlib only. On
// error dst is returned unchanged.
//
// Which messages may be compressed (not hello, not authentication) is the
// caller's decision; this function compresses what it is given.
func AppendCompressed(dst, msg []byte, c Compressor, zlibLevel int) ([]byte, error) {
	if len(msg) < HeaderSize || int64(binary.LittleEndian.Uint32(msg)) != int64(len(msg)) {
		return dst, newError(ErrMalformed, "not one whole message (%d bytes)", len(msg))
	}
	h := parseHeader(msg)
	if h.OpCode == OpCompressed {
		return dst, newError(ErrMalformed, "OP_COMPRESSED wrapping OP_COMPRESSED")
	}
	orig := len(dst)
	start, dst := beginMessage(dst, h.RequestID, h.ResponseTo, OpCompressed)
	dst = appendInt32(dst, int32(h.OpCode))
	dst = appendInt32(dst, int32(len(msg)-HeaderSize))
	dst = append(dst, byte(c))
	payload := msg[HeaderSize:]
	var err error
	switch c {
	case CompressorNoop:
		dst = append(dst, payload...)
	case CompressorSnappy:
		dst = appendSnappy(dst, payload)
	case CompressorZlib:
		dst, err = appendZlib(dst, payload, zlibLevel)
	case CompressorZstd:
		dst, err = appendZstd(dst, payload)
	default:
		err = newError(ErrCompressor, "compressorId %d", c)
	}
	if err != nil {
		return dst[:orig], err
	}
	return endMessage(dst, start), nil
}

func appendSnappy(dst, payload []byte) []byte {
	n := snappy.MaxEncodedLen(len(payload))
	dst = slices.Grow(dst, n)
	out := snappy.Encode(dst[len(dst):len(dst)+n], payload)
	return dst[:len(dst)+len(out)]
}

// zlibDeflater is a pooled zlib writer that appends to a caller's buffer.
type zlibDeflater struct {
	zw  *zlib.Writer
	out appendWriter
}

// appendWriter is an io.Writer that appends to b.
type appendWriter struct{ b []byte }

// Write appends p; it cannot fail.
func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// zlibDeflaters pools writers per level (index level+1): a zlib writer's
// level is fixed when it is made.
var zlibDeflaters [11]sync.Pool

func appendZlib(dst, payload []byte, level int) ([]byte, error) {
	if level < -1 || level > 9 {
		return dst, newError(ErrCompressor, "zlib level %d outside -1..9", level)
	}
	pool := &zlibDeflaters[level+1]
	z, _ := pool.Get().(*zlibDeflater)
	if z == nil {
		z = new(zlibDeflater)
		zw, err := zlib.NewWriterLevel(&z.out, level)
		if err != nil {
			return dst, newError(ErrCompressor, "zlib: %v", err)
		}
		z.zw = zw
	}
	defer pool.Put(z)
	z.out.b = dst
	z.zw.Reset(&z.out)
	_, err := z.zw.Write(payload)
	if err == nil {
		err = z.zw.Close()
	}
	dst, z.out.b = z.out.b, nil // the pool must not keep the caller's buffer
	if err != nil {
		return dst, newError(ErrCompressor, "zlib: %v", err)
	}
	return dst, nil
}

// zstdEncoder is shared: EncodeAll is safe for concurrent use, and the
// encoder's state is worth building once rather than per connection.
var zstdEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
	return zstd.NewWriter(nil, zstd.WithZeroFrames(true))
})

func appendZstd(dst, payload []byte) ([]byte, error) {
	enc, err := zstdEncoder()
	if err != nil {
		return dst, newError(ErrCompressor, "zstd: %v", err)
	}
	return enc.EncodeAll(payload, dst), nil
}
