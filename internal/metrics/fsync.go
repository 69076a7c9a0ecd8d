package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// histogram is a Prometheus histogram's content.
type histogram struct {
	count   uint64
	sum     float64
	buckets map[float64]uint64
}

// fsyncSeconds reads Pebble's WAL fsync histogram (nanoseconds) in seconds.
func fsyncSeconds(h prometheus.Histogram) (histogram, bool) {
	var d dto.Metric
	if h.Write(&d) != nil || d.Histogram == nil {
		return histogram{}, false
	}
	out := histogram{count: d.Histogram.GetSampleCount(), sum: d.Histogram.GetSampleSum() / 1e9, buckets: map[float64]uint64{}}
	for _, b := range d.Histogram.GetBucket() {
		out.buckets[b.GetUpperBound()/1e9] = b.GetCumulativeCount()
	}
	return out, true
}
