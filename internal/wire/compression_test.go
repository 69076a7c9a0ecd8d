package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

var allCompressors = []Compressor{CompressorNoop, CompressorSnappy, CompressorZlib, CompressorZstd}

// TestCompressionRoundTrip wraps every kind of message in every compressor
// and checks that it reads back as the message itself, marked compressed.
func TestCompressionRoundTrip(t *testing.T) {
	messages := map[string][]byte{
		"isMaster OP_QUERY":    isMasterQuery(t),
		"hello OP_MSG":         helloMsg(t),
		"insert with sequence": insertMsg(t),
		"insert with checksum": withChecksum(insertMsg(t)),
		"OP_REPLY":             helloReply(t),
	}
	for name, msg := range messages {
		plain, err := readOne(msg, testMax)
		if err != nil {
			t.Fatal(err)
		}
		want := cloneMessage(plain)
		for _, c := range allCompressors {
			levels := []int{DefaultZlibLevel}
			if c == CompressorZlib {
				levels = []int{-1, 0, 1, 9}
			}
			for _, level := range levels {
				t.Run(name+"/"+c.String(), func(t *testing.T) {
					wire, err := AppendCompressed(nil, msg, c, level)
					if err != nil {
						t.Fatal(err)
					}
					got, err := readOne(wire, testMax)
					if err != nil {
						t.Fatal(err)
					}
					if !got.Compressed || got.Compressor != c {
						t.Fatalf("Compressed=%v Compressor=%v", got.Compressed, got.Compressor)
					}
					got.Compressed = false
					if diff := sameMessage(got, want); diff != "" {
						t.Fatalf("differs in %s", diff)
					}
				})
			}
		}
	}
}

func TestCompressorNames(t *testing.T) {
	for _, c := range allCompressors {
		got, ok := CompressorByName(c.String())
		if !ok || got != c {
			t.Errorf("CompressorByName(%q) = %v, %v", c.String(), got, ok)
		}
	}
	want := map[string]Compressor{"noop": 0, "snappy": 1, "zlib": 2, "zstd": 3}
	for name, id := range want {
		if c, ok := CompressorByName(name); !ok || c != id {
			t.Errorf("%q: got %d, want %d", name, c, id)
		}
	}
	for _, name := range []string{"", "none", "Snappy", "lz4", "disabled"} {
		if _, ok := CompressorByName(name); ok {
			t.Errorf("CompressorByName(%q) found a compressor", name)
		}
	}
	if s := Compressor(9).String(); s != "compressor(9)" {
		t.Errorf("Compressor(9) = %q", s)
	}
}

func TestAppendCompressedErrors(t *testing.T) {
	hello := helloMsg(t)
	tests := []struct {
		name  string
		msg   []byte
		c     Compressor
		level int
		want  error
	}{
		{"unknown compressor", hello, 4, -1, ErrCompressor},
		{"zlib level too high", hello, CompressorZlib, 10, ErrCompressor},
		{"zlib level too low", hello, CompressorZlib, -2, ErrCompressor},
		{"not a whole message", hello[:len(hello)-1], CompressorSnappy, -1, ErrMalformed},
		{"shorter than a header", hello[:10], CompressorSnappy, -1, ErrMalformed},
		{"already compressed", mustCompress(t, hello, CompressorNoop), CompressorSnappy, -1, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte("kept")
			out, err := AppendCompressed(dst, tt.msg, tt.c, tt.level)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if !bytes.Equal(out, []byte("kept")) {
				t.Fatalf("dst changed to %q", out)
			}
		})
	}
}

// compressRaw compresses payload with the package's own compressors, for
// building OP_COMPRESSED messages whose headers lie.
func compressRaw(t *testing.T, c Compressor, payload []byte) []byte {
	t.Helper()
	switch c {
	case CompressorNoop:
		return bytes.Clone(payload)
	case CompressorSnappy:
		return appendSnappy(nil, payload)
	case CompressorZlib:
		out, err := appendZlib(nil, payload, 1)
		if err != nil {
			t.Fatal(err)
		}
		return out
	case CompressorZstd:
		out, err := appendZstd(nil, payload)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	t.Fatalf("compressor %v", c)
	return nil
}

func TestDecompressMalformed(t *testing.T) {
	hello := helloMsg(t)
	payload := hello[HeaderSize:]
	size := int32(len(payload))
	bomb := make([]byte, 4*testMax) // zeros: compresses to almost nothing

	type tc struct {
		name string
		in   []byte
		want error
	}
	tests := []tc{
		{"shorter than minimum", frame(OpCompressed, 9, 0, le32(uint32(OpMsg)), le32(0)), ErrMalformed},
		{"unknown compressor id", compressedFrame(9, OpMsg, size, 7, payload), ErrCompressor},
		{"negative uncompressedSize", compressedFrame(9, OpMsg, -1, CompressorNoop, payload), ErrUncompressedSize},
		{"uncompressedSize over max", compressedFrame(9, OpMsg, testMax, CompressorNoop, payload), ErrUncompressedSize},
		{"uncompressedSize 2 GiB", compressedFrame(9, OpMsg, 0x7FFFFFFF, CompressorZlib, compressRaw(t, CompressorZlib, payload)), ErrUncompressedSize},
		{"wraps OP_COMPRESSED", compressedFrame(9, OpCompressed, size, CompressorNoop, payload), ErrMalformed},
		{"wraps unsupported opcode", compressedFrame(9, 2002, size, CompressorNoop, payload), ErrUnsupportedOpCode},
		{"wrapped OP_MSG invalid", compressedFrame(9, OpMsg, 5, CompressorNoop, []byte{0, 0, 0, 0, 2}), ErrMalformed},
		{"snappy length header lies", compressedFrame(9, OpMsg, 1000, CompressorSnappy, snappyClaiming(t, 1000, payload)), ErrDecompress},
		{"snappy expansion impossible", compressedFrame(9, OpMsg, 100000, CompressorSnappy, []byte{0xA0, 0x8D, 0x06, 0}), ErrDecompress},
		{"snappy corrupt", compressedFrame(9, OpMsg, size, CompressorSnappy, append(binary.AppendUvarint(nil, uint64(size)), bytes.Repeat([]byte{0xFF}, 40)...)), ErrDecompress},
		{"zlib corrupt", compressedFrame(9, OpMsg, size, CompressorZlib, []byte{0x78, 0x9C, 0xFF, 0xFF, 0xFF}), ErrDecompress},
		{"zlib bad header", compressedFrame(9, OpMsg, size, CompressorZlib, []byte("not zlib")), ErrDecompress},
		{"zlib trailing bytes", compressedFrame(9, OpMsg, size, CompressorZlib, append(compressRaw(t, CompressorZlib, payload), 1, 2, 3)), ErrDecompress},
		{"zstd corrupt", compressedFrame(9, OpMsg, size, CompressorZstd, []byte{0x28, 0xB5, 0x2F, 0xFD, 0xFF, 0xFF}), ErrDecompress},
	}
	for _, c := range allCompressors {
		tests = append(tests,
			tc{c.String() + " inflates larger than declared", compressedFrame(9, OpMsg, size-1, c, compressRaw(t, c, payload)), ErrUncompressedSize},
			tc{c.String() + " inflates smaller than declared", compressedFrame(9, OpMsg, size+1, c, compressRaw(t, c, payload)), ErrUncompressedSize})
		if c != CompressorNoop {
			// Zip bombs: a few KiB that inflate past the maximum, declared
			// both within it (caught when output passes the declared size)
			// and beyond it (refused before inflating).
			packed := compressRaw(t, c, bomb)
			tests = append(tests,
				tc{c.String() + " bomb declared within max", compressedFrame(9, OpMsg, testMax-HeaderSize, c, packed), ErrUncompressedSize},
				tc{c.String() + " bomb declared truthfully", compressedFrame(9, OpMsg, int32(len(bomb)), c, packed), ErrUncompressedSize})
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkReadError(t, tt.in, tt.want, false)
		})
	}
}

// snappyClaiming compresses payload with snappy and rewrites the block's
// own length header to claim n bytes.
func snappyClaiming(t *testing.T, n uint64, payload []byte) []byte {
	packed := compressRaw(t, CompressorSnappy, payload)
	_, k := binary.Uvarint(packed)
	return append(binary.AppendUvarint(nil, n), packed[k:]...)
}

// TestBombMemory: a zip bomb costs at most the maximum message size.
func TestBombMemory(t *testing.T) {
	bomb := make([]byte, 8*testMax)
	for _, c := range []Compressor{CompressorZlib, CompressorZstd} {
		in := compressedFrame(1, OpMsg, testMax-HeaderSize, c, compressRaw(t, c, bomb))
		r := NewReader(bytes.NewReader(in), testMax)
		allocated := bytesAllocated(func() {
			if _, err := r.ReadMessage(); !errors.Is(err, ErrUncompressedSize) {
				t.Fatalf("%v: err = %v", c, err)
			}
		})
		if cap(r.inflated) > testMax || allocated > 4*testMax {
			t.Fatalf("%v: inflated buffer %d, %d bytes allocated for a %d-byte maximum", c, cap(r.inflated), allocated, testMax)
		}
	}
}

// TestCompressedChecksum: the checksum of a compressed OP_MSG covers the
// uncompressed message, header rebuilt, so corrupting it is caught after
// decompression.
func TestCompressedChecksum(t *testing.T) {
	msg := withChecksum(helloMsg(t))
	msg[len(msg)-2] ^= 0x10
	for _, c := range allCompressors {
		_, err := readOne(mustCompress(t, msg, c), testMax)
		if !errors.Is(err, ErrChecksum) || !IsFatal(err) {
			t.Errorf("%v: err = %v, want a fatal checksum error", c, err)
		}
	}
}

func TestCompressedErrorNamesInnerRequest(t *testing.T) {
	bad := frame(OpMsg, 41, 0, le32(1<<4), kind0(doc(t, bson.D{{Key: "ping", Value: 1}})))
	_, err := readOne(mustCompress(t, bad, CompressorZstd), testMax)
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrRequiredFlags) || e.Header.RequestID != 41 || e.Header.OpCode != OpMsg {
		t.Fatalf("err = %#v", err)
	}
}
