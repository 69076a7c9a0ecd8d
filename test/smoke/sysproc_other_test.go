//go:build !linux

package smoke

import "syscall"

// serverSysProcAttr: only Linux can tie the server's life to the test
// binary's; elsewhere the test's cleanup is the only thing that stops it.
func serverSysProcAttr() *syscall.SysProcAttr { return nil }
