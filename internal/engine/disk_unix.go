//go:build unix

package engine

import "syscall"

// diskBytes is the size of the filesystem holding dir (0 when unknown).
func diskBytes(dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0
	}
	return int64(st.Blocks) * int64(st.Bsize)
}
