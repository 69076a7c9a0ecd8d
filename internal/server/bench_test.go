package server_test

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn/internal/wire"
)

// BenchmarkRoundTrip puts Cairn's request latency next to the floor of a
// bare Go TCP echo server on loopback, measured with the same raw client in
// the same run (BENCHMARKS.md reports the ratios). The driver variants show
// what an application sees, driver overhead included.
func BenchmarkRoundTrip(b *testing.B) {
	ping := mustMarshal(b, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})
	find := mustMarshal(b, bson.D{{Key: "find", Value: "bench"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 42}}},
		{Key: "limit", Value: 1}, {Key: "singleBatch", Value: true}, {Key: "$db", Value: "bench"}})
	// What the Go driver sends for FindOne to a standalone: the implicit
	// session's lsid and $db, no $readPreference (YCSB-C's read).
	lsid := func(i int) bson.D {
		id := make([]byte, 16)
		id[0], id[15] = byte(i), 0x40
		return bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: id}}}
	}
	findSession := func(i int) []byte {
		return wire.AppendMsg(nil, 1, 0, 0, mustMarshal(b, bson.D{{Key: "find", Value: "bench"},
			{Key: "filter", Value: bson.D{{Key: "_id", Value: 42 + i}}}, {Key: "limit", Value: 1},
			{Key: "singleBatch", Value: true}, {Key: "lsid", Value: lsid(i)}, {Key: "$db", Value: "bench"}}))
	}

	b.Run("target=echo/op=ping", func(b *testing.B) {
		addr := startEcho(b)
		rawLoop(b, addr, wire.AppendMsg(nil, 1, 0, 0, ping))
	})
	s := startServer(b)
	c := s.client(b)
	ctx := context.Background()
	docs := make([]any, 1000)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "name", Value: "user"}, {Key: "n", Value: i}}
	}
	if _, err := c.Database("bench").Collection("bench").InsertMany(ctx, docs); err != nil {
		b.Fatal(err)
	}
	b.Run("target=cairn/op=ping", func(b *testing.B) { rawLoop(b, s.addr, wire.AppendMsg(nil, 1, 0, 0, ping)) })
	b.Run("target=cairn/op=find_by_id", func(b *testing.B) { rawLoop(b, s.addr, wire.AppendMsg(nil, 1, 0, 0, find)) })
	b.Run("target=cairn/op=find_by_id_lsid", func(b *testing.B) { rawLoop(b, s.addr, findSession(0)) })
	// 16 raw connections at once, each with its own lsid, as YCSB-C's 16
	// threads: the command path's shared state under contention with
	// no driver in the process.
	b.Run("target=cairn/op=find_by_id_lsid/conns=16", func(b *testing.B) {
		b.SetParallelism(8) // 8 × GOMAXPROCS(2) = 16 goroutines
		var next atomic.Int32
		b.RunParallel(func(pb *testing.PB) {
			msg := findSession(int(next.Add(1)))
			nc, err := net.Dial("tcp", s.addr)
			if err != nil {
				b.Error(err)
				return
			}
			defer nc.Close()
			r := wire.NewReader(nc, 0)
			for pb.Next() {
				if _, err := nc.Write(msg); err != nil {
					b.Error(err)
					return
				}
				if _, err := r.ReadMessage(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("target=cairn-driver/op=ping", func(b *testing.B) {
		for b.Loop() {
			if err := c.Ping(ctx, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("target=cairn-driver/op=find_by_id", func(b *testing.B) {
		coll := c.Database("bench").Collection("bench")
		var out bson.Raw
		for b.Loop() {
			if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 42}}).Decode(&out); err != nil {
				b.Fatal(err)
			}
		}
	})
	// 16 goroutines reading at once through one driver pool, as YCSB-C's
	// threads do: the command path's shared state (the operation registry,
	// counters, the session table) under contention (issue 15's YCSB-C
	// figure; profile with -cpuprofile).
	b.Run("target=cairn-driver/op=find_by_id/parallel=16", func(b *testing.B) {
		coll := c.Database("bench").Collection("bench")
		b.SetParallelism(8) // 8 × GOMAXPROCS(2) = 16 goroutines
		b.RunParallel(func(pb *testing.PB) {
			var out bson.Raw
			for i := 0; pb.Next(); i++ {
				if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: i % 1000}}).Decode(&out); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

func mustMarshal(b *testing.B, d bson.D) []byte {
	out, err := bson.Marshal(d)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// rawLoop sends msg and reads one reply per iteration on one connection.
func rawLoop(b *testing.B, addr string, msg []byte) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	r := wire.NewReader(nc, 0)
	for b.Loop() {
		if _, err := nc.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := r.ReadMessage(); err != nil {
			b.Fatal(err)
		}
	}
}

// startEcho runs a TCP server that returns every message it reads: the cost
// of the socket and framing with no database behind it.
func startEcho(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				hdr := make([]byte, 4)
				buf := make([]byte, 0, 4096)
				for {
					if _, err := io.ReadFull(nc, hdr); err != nil {
						return
					}
					n := int(binary.LittleEndian.Uint32(hdr))
					buf = append(buf[:0], hdr...)
					buf = append(buf, make([]byte, n-4)...)
					if _, err := io.ReadFull(nc, buf[4:]); err != nil {
						return
					}
					if _, err := nc.Write(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}
