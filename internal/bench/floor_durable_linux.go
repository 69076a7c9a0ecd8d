package bench

import (
	"os"
	"syscall"
)

// fdatasync makes f's written data durable without its metadata beyond
// what reading the data needs (the durable floor's log never grows).
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
