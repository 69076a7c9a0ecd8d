package bench

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill the child if the bench process dies
// without stopping it (a kill -9 of `cairn bench` leaves no server behind).
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
