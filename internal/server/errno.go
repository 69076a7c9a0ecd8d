package server

import (
	"syscall"
	"time"
)

// errTooManyFiles is what accept returns when the process is out of file
// descriptors: a moment to wait, not a reason to stop serving.
var errTooManyFiles = syscall.EMFILE

// pastDeadline makes a blocked read return at once.
var pastDeadline = time.Unix(1, 0)
