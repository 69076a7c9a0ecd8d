package engine

import (
	"crypto/rand"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// BenchmarkIDLoad reproduces the motivation for server-side sequential ids
// (MySQL's WL#10955): loading many 1 KiB documents in batches of 1,000, it
// reports documents/second over the first and the last million for
// sequential ids, ObjectIds and random UUIDv4 _ids. Run with `make bench-ids`;
// -idload.docs changes the size (default 5 M, ~5 GB written per id kind).
var idLoadDocs = flag.Int("idload.docs", 5_000_000, "documents per id kind in BenchmarkIDLoad")

var idLoadMetrics = flag.Bool("idload.metrics", false, "log Pebble's metrics after each load of BenchmarkIDLoad")

var idLoadProfile = flag.String("idload.cpuprofile", "", "write a CPU profile of each measured window of BenchmarkIDLoad to this prefix + -<kind>-{first,last}.cpu")

func BenchmarkIDLoad(b *testing.B) {
	for _, kind := range []string{"sequential", "objectid", "uuid"} {
		b.Run("ids="+kind, func(b *testing.B) {
			for b.Loop() {
				first, last := idLoad(b, kind, *idLoadDocs)
				b.ReportMetric(first, "first-M-docs/s")
				b.ReportMetric(last, "last-M-docs/s")
				b.ReportMetric(100*(first-last)/first, "loss-%")
			}
		})
	}
}

// idLoad loads n documents and returns the rates over the first and the last
// million (or fifth, when n is under 5 M).
func idLoad(b *testing.B, kind string, n int) (first, last float64) {
	e, err := Open(b.TempDir(), Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ns := Namespace{"load", kind}
	var opts bson.Raw
	if kind == "sequential" {
		opts, _ = bson.Marshal(bson.D{{Key: "idGenerator", Value: "sequential"}})
	}
	if err := e.CreateCollection(ns, opts); err != nil {
		b.Fatal(err)
	}
	const batch = 1000
	window := min(1_000_000, n/5)
	pad := make([]byte, 1024-60) // ~1 KiB documents
	docs := make([]bsoncore.Document, batch)
	var w loadWindow
	var stopProfile func()
	for done := 0; done < n; done += batch {
		if done == 0 || done == n-window {
			w.start()
			if *idLoadProfile != "" {
				stopProfile = startProfile(b, fmt.Sprintf("%s-%s-%s.cpu", *idLoadProfile, kind, map[bool]string{true: "first", false: "last"}[done == 0]))
			}
		}
		for i := range docs {
			d := bson.D{{Key: "n", Value: done + i}, {Key: "pad", Value: pad}}
			switch kind {
			case "objectid":
				d = append(bson.D{{Key: "_id", Value: bson.NewObjectID()}}, d...)
			case "uuid":
				var u [16]byte
				_, _ = rand.Read(u[:])
				u[6], u[8] = u[6]&0x0f|0x40, u[8]&0x3f|0x80
				d = append(bson.D{{Key: "_id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: u[:]}}}, d...)
			}
			docs[i], _ = bson.Marshal(d)
		}
		res, err := e.Insert(ns, docs, true)
		if err != nil || res.Inserted != batch {
			b.Fatalf("insert at %d: %+v %v", done, res.WriteErrors, err)
		}
		if done+batch == window || done+batch == n {
			rate, cpu := w.stop(window)
			if stopProfile != nil {
				stopProfile()
				stopProfile = nil
			}
			if done+batch == window {
				first = rate
			} else {
				last = rate
			}
			b.Logf("%s: docs %d–%d: %.0f docs/s, %.1f µs CPU/doc", kind, done+batch-window, done+batch, rate, cpu)
			if *idLoadMetrics {
				fmt.Fprintf(os.Stderr, "%s pebble metrics at %d docs:\n%s\n", kind, done+batch, e.Storage().Pebble().Metrics())
				printLastTables(e.Storage().Pebble())
			}
		}
	}
	b.Logf("%s: %d docs, first window %.0f docs/s, last window %.0f docs/s (%s)", kind, n, first, last, fmt.Sprintf("%.1f%% loss", 100*(first-last)/first))
	return first, last
}

// loadWindow measures a stretch of a load by wall clock and by the process's
// CPU time (user and system, every goroutine, Pebble's compactions included):
// on a shared machine the wall-clock rate moves with other people's work,
// CPU per document much less.
type loadWindow struct {
	wall time.Time
	cpu  time.Duration
}

func (w *loadWindow) start() { w.wall, w.cpu = time.Now(), processCPU() }

// stop returns the window's documents/second and CPU µs per document.
func (w *loadWindow) stop(docs int) (rate, cpuPerDoc float64) {
	rate = float64(docs) / time.Since(w.wall).Seconds()
	cpuPerDoc = float64((processCPU() - w.cpu).Microseconds()) / float64(docs)
	return rate, cpuPerDoc
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// startProfile starts a CPU profile into path and returns its stop function.
func startProfile(b *testing.B, path string) func() {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

// printLastTables prints the bounds of the last two tables of each level:
// whether the newest documents' keys fall inside an existing table decides
// whether compactions can move tables down instead of rewriting them.
func printLastTables(pdb *pebble.DB) {
	levels, err := pdb.SSTables()
	if err != nil {
		return
	}
	for l, tables := range levels {
		for _, t := range tables[max(0, len(tables)-2):] {
			fmt.Fprintf(os.Stderr, "L%d %s %q .. %q (%d bytes)\n", l, t.FileNum, t.Smallest.UserKey, t.Largest.UserKey, t.Size)
		}
	}
}
