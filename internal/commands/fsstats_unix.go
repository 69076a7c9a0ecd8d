//go:build unix

package commands

import "syscall"

// fsSizes returns the used and total bytes of the filesystem holding path
// (dbStats' fsUsedSize and fsTotalSize).
func fsSizes(path string) (used, total int64, ok bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, 0, false
	}
	bs := int64(st.Bsize)
	total = int64(st.Blocks) * bs
	return total - int64(st.Bfree)*bs, total, true
}
