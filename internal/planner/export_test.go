package planner

// SetScanLimits sets maxRanges and skipAfter (for BenchmarkLongIn's
// comparisons) and returns what restores them.
func SetScanLimits(ranges, after int) (restore func()) {
	r, a := maxRanges, skipAfter
	maxRanges, skipAfter = ranges, after
	return func() { maxRanges, skipAfter = r, a }
}
