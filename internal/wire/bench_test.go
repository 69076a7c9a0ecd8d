package wire

import (
	"bytes"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// loopReader serves the same bytes forever, like a client repeating a request.
type loopReader struct {
	b   []byte
	off int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], l.b[l.off:])
		n += c
		l.off = (l.off + c) % len(l.b)
	}
	return n, nil
}

func benchmarkRead(b *testing.B, msg []byte) {
	r := NewReader(&loopReader{b: msg}, DefaultMaxMessageSize)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.ReadMessage(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadMessage(b *testing.B) {
	b.Run("hello", func(b *testing.B) { benchmarkRead(b, helloMsg(b)) })
	b.Run("insert", func(b *testing.B) { benchmarkRead(b, insertMsg(b)) })
	b.Run("insert+checksum", func(b *testing.B) { benchmarkRead(b, withChecksum(insertMsg(b))) })
	b.Run("isMaster", func(b *testing.B) { benchmarkRead(b, isMasterQuery(b)) })
	// A 100-document insert batch of ~1 KiB documents.
	var docs []bsoncore.Document
	for i := range 100 {
		docs = append(docs, doc(b, bson.D{{Key: "_id", Value: int32(i)}, {Key: "pad", Value: string(bytes.Repeat([]byte{'x'}, 1000))}}))
	}
	batch := frame(OpMsg, 1, 0, le32(0), kind0(insertBody(b)), kind1("documents", docs...))
	b.Run("insert100x1KiB", func(b *testing.B) { benchmarkRead(b, batch) })
	for _, c := range []Compressor{CompressorSnappy, CompressorZlib, CompressorZstd} {
		b.Run("insert100x1KiB/"+c.String(), func(b *testing.B) { benchmarkRead(b, mustCompress(b, batch, c)) })
	}
}

// replyBody is a find reply with one small document, the common point read.
func replyBody(b *testing.B) bsoncore.Document {
	return doc(b, bson.D{
		{Key: "cursor", Value: bson.D{
			{Key: "firstBatch", Value: bson.A{bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "name", Value: "ada"}, {Key: "age", Value: int32(36)}}}},
			{Key: "id", Value: int64(0)},
			{Key: "ns", Value: "app.users"},
		}},
		{Key: "ok", Value: 1.0},
	})
}

func BenchmarkAppendMsg(b *testing.B) {
	body := replyBody(b)
	for _, bc := range []struct {
		name  string
		flags MsgFlags
	}{{"plain", 0}, {"checksum", FlagChecksumPresent}} {
		b.Run(bc.name, func(b *testing.B) {
			buf := make([]byte, 0, 4096)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				buf = AppendMsg(buf[:0], 2, 1, bc.flags, body)
			}
		})
	}
}

func BenchmarkAppendCompressed(b *testing.B) {
	var docs []bsoncore.Document
	for i := range 100 {
		docs = append(docs, doc(b, bson.D{{Key: "_id", Value: int32(i)}, {Key: "name", Value: "user"}, {Key: "score", Value: float64(i) / 3}}))
	}
	reply := AppendMsg(nil, 2, 1, 0, doc(b, bson.D{{Key: "cursor", Value: bson.D{{Key: "firstBatch", Value: docs}}}, {Key: "ok", Value: 1.0}}))
	for _, c := range allCompressors {
		b.Run(c.String(), func(b *testing.B) {
			buf := make([]byte, 0, 2*len(reply))
			b.SetBytes(int64(len(reply)))
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if buf, err = AppendCompressed(buf[:0], reply, c, DefaultZlibLevel); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
