package planner

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// BenchmarkKeyRanges: what expanding an $in of 50,000 int32 points to
// 50,000 key ranges costs by itself (maxRanges raised past them), the
// alternative to seeking that BenchmarkLongIn's "ranges" mode runs.
func BenchmarkKeyRanges(b *testing.B) {
	vals := make([]bsoncore.Value, 50000)
	for i := range vals {
		vals[i] = bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(2*i))}
	}
	bounds := []OIL{pointsOIL(vals)}
	restore := SetScanLimits(1<<30, skipAfter)
	defer restore()
	for b.Loop() {
		if rs, _ := keyRanges(idSpec.KeyPattern, bounds, nil); len(rs) != len(vals) {
			b.Fatalf("%d ranges", len(rs))
		}
	}
}
