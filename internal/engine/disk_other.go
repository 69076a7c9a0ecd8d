//go:build !unix

package engine

// diskBytes is the size of the filesystem holding dir (0 when unknown).
func diskBytes(string) int64 { return 0 }
