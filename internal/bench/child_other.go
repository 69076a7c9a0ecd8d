//go:build !linux

package bench

import "os/exec"

// dieWithParent has no portable equivalent of Linux's parent-death signal;
// elsewhere a killed bench process may leave its child server running.
func dieWithParent(*exec.Cmd) {}
