package rstest

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairndb/cairn/internal/hoptrace"
)

// BenchmarkWrite measures writes of one 1 KiB key acknowledged by a
// three-member in-process set (real engines and data directories, the
// in-process network without faults), from 16 writers: the replication
// path's cost without the wire protocol. Profile it with -cpuprofile.
//
//	go test -run XXX -bench Write -benchtime 5000x ./internal/replset/rstest/
func BenchmarkWrite(b *testing.B) {
	s := Start(b, 3, 1, Options{})
	p := s.WaitForPrimary(20 * time.Second)
	val := make([]byte, 1024)
	var next atomic.Int64
	b.SetParallelism(8)
	hoptrace.Reset()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := s.Write(p, fmt.Appendf(nil, "b%d", next.Add(1)), val); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	// How many of the primary's groups were proposed while earlier ones
	// replicated (storage's "Pipelined groups"), and how many requests a
	// group carried.
	g := s.Engine(p).Storage().CommitGroups()
	b.ReportMetric(float64(g.Follows)/float64(max(g.Groups, 1)), "pipelined/group")
	b.ReportMetric(float64(g.Requests)/float64(max(g.Groups, 1)), "writes/group")
	if hoptrace.Enabled {
		// Built with -tags cairntrace: each hop's histogram (the three
		// members share them: append.* and loop.* mix them).
		hoptrace.Write(os.Stderr)
	}
}
