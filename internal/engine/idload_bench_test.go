package engine

import (
	"crypto/rand"
	"flag"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// BenchmarkIDLoad reproduces the motivation for server-side sequential ids
// (MySQL's WL#10955): loading many 1 KiB documents in batches of 1,000, it
// reports documents/second over the first and the last million for
// sequential ids, ObjectIds and random UUIDv4 _ids. Run with `make bench-ids`;
// -idload.docs changes the size (default 5 M, ~5 GB written per id kind).
var idLoadDocs = flag.Int("idload.docs", 5_000_000, "documents per id kind in BenchmarkIDLoad")

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
	var windowStart time.Time
	for done := 0; done < n; done += batch {
		if done == 0 || done == n-window {
			windowStart = time.Now()
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
		if done+batch == window {
			first = float64(window) / time.Since(windowStart).Seconds()
		}
		if done+batch == n {
			last = float64(window) / time.Since(windowStart).Seconds()
		}
	}
	b.Logf("%s: %d docs, first window %.0f docs/s, last window %.0f docs/s (%s)", kind, n, first, last, fmt.Sprintf("%.1f%% loss", 100*(first-last)/first))
	return first, last
}
