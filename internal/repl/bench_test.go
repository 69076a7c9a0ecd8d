package repl

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkPropose measures proposals acknowledged by a 3-member group
// (committed on a majority, applied on the leader), one at a time and
// from 16×GOMAXPROCS writers, over the in-process network and over TCP, with each
// member's log synced to disk in the test's temporary directory. Each
// proposal is 1 KiB, a small commit group.
//
//	go test -run XXX -bench Propose -benchtime 2000x ./internal/repl/
func BenchmarkPropose(b *testing.B) {
	payload := make([]byte, 1024)
	for _, tcp := range []bool{false, true} {
		for _, par := range []int{0, 16} {
			b.Run(fmt.Sprintf("tcp=%v/parallelism=%d", tcp, par), func(b *testing.B) {
				c := newClusterOn(b, 3, 1, tcp, b.TempDir())
				c.waitLeader(5 * time.Second)
				var next atomic.Int64
				one := func() bool {
					p := append([]byte(fmt.Sprintf("b%d ", next.Add(1))), payload...)
					if _, _, err := c.commit(string(p), 10*time.Second); err != nil {
						b.Error(err)
						return false
					}
					return true
				}
				b.ResetTimer()
				if par == 0 {
					for range b.N {
						if !one() {
							return
						}
					}
					return
				}
				b.SetParallelism(par)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() && one() {
					}
				})
				b.StopTimer()
				// How often the leader applied a committed entry while its
				// appender wrote later ones, and how many appends shared a
				// sync ("Log written off the loop").
				st := c.node(c.leader()).Status()
				b.ReportMetric(float64(st.AppliedDuringAppend)/float64(max(st.AppliedEntries, 1)), "overlap/applied")
				b.ReportMetric(float64(st.AppendMsgs)/float64(max(st.Appends, 1)), "appends/sync")
				b.ReportMetric(float64(st.AppliedEntries)/float64(max(st.Readies, 1)), "applied/ready")
			})
		}
	}
}
