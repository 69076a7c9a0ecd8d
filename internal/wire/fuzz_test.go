package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

// FuzzReadMessage feeds arbitrary bytes to a Reader. Nothing may panic;
// every error must be an *Error or a truncation; and every message that
// reads re-encodes, with the package's encoders, to bytes that read back as
// the same message. The seeds are real driver traffic, so the corpus runs
// the handshake, hello, and insert paths in every ordinary go test.
func FuzzReadMessage(f *testing.F) {
	for _, b := range seeds(f) {
		f.Add(b)
	}
	// Two messages in one input, and a damaged one, so mutations explore
	// reading on after a message and after an error.
	f.Add(append(helloMsg(f), insertMsg(f)...))
	f.Add(append(frame(2002, 1, 0, le32(0)), helloMsg(f)...))
	f.Add(withChecksum(helloMsg(f))[:40])

	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), testMax)
		for range 4 {
			m, err := r.ReadMessage()
			if err != nil {
				var e *Error
				if !errors.As(err, &e) && !errors.Is(err, io.EOF) {
					t.Fatalf("error of unexpected type %T: %v", err, err)
				}
				if IsFatal(err) {
					return
				}
				continue
			}
			again, err := readOne(reencode(t, m), testMax)
			if err != nil {
				t.Fatalf("re-encoded %v does not read: %v", m.Header.OpCode, err)
			}
			if diff := sameMessage(m, again); diff != "" {
				t.Fatalf("re-encoded %v differs in %s", m.Header.OpCode, diff)
			}
		}
	})
}

// FuzzDecompress drives each decompressor with arbitrary payloads and
// declared sizes. Nothing may panic or inflate past the declared size, and
// whatever inflates must compress and inflate back to the same bytes.
func FuzzDecompress(f *testing.F) {
	for _, msg := range [][]byte{helloMsg(f), insertMsg(f), isMasterQuery(f)} {
		for _, c := range allCompressors {
			wire := mustCompress(f, msg, c)
			f.Add(byte(c), int32(len(msg)-HeaderSize), wire[HeaderSize+compressedFixedSize:])
		}
	}
	f.Add(byte(CompressorZlib), int32(100), []byte{0x78, 0x9C, 0x03, 0x00})
	f.Add(byte(CompressorSnappy), int32(3), []byte{0x03, 0x08, 'a', 'b', 'c'})

	f.Fuzz(func(t *testing.T, id byte, size int32, payload []byte) {
		in := compressedFrame(7, OpMsg, size, Compressor(id), payload)
		out, c, err := decompress(nil, in, testMax)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error of unexpected type %T: %v", err, err)
			}
			return
		}
		if c != Compressor(id) || len(out) != HeaderSize+int(size) || int(binary.LittleEndian.Uint32(out)) != len(out) {
			t.Fatalf("inflated %d bytes for declared %d", len(out)-HeaderSize, size)
		}
		rewrapped, err := AppendCompressed(nil, out, c, DefaultZlibLevel)
		if err != nil {
			t.Fatal(err)
		}
		back, _, err := decompress(nil, rewrapped, testMax)
		if err != nil || !bytes.Equal(back, out) {
			t.Fatalf("round trip through %v: %v", c, err)
		}
	})
}
