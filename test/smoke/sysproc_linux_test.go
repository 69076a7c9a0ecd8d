package smoke

import "syscall"

// serverSysProcAttr has the kernel kill the server if the test binary dies
// without running its cleanups (a go test -timeout panic, say), so no stray
// cairn keeps a port and a temp directory.
func serverSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
