package storage

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/cairndb/cairn/internal/failpoint"
	"github.com/cairndb/cairn/internal/mongoerr"
)

var (
	// ErrClosed is returned by operations on a closed DB.
	ErrClosed = errors.New("storage: closed")
	// ErrLocked is returned by Open when another process holds the directory.
	ErrLocked = errors.New("storage: data directory is in use by another process")
	// ErrNotCairn is returned by Open for a Pebble store Cairn did not create.
	ErrNotCairn = errors.New("storage: not a Cairn data directory")
	// ErrCorrupt is returned by Open when the directory cannot be read as a store.
	ErrCorrupt = errors.New("storage: data directory is damaged")
	// ErrFailPoint fails a commit group when the failpoint
	// StorageFailBeforeCommit fires (fault tests only).
	ErrFailPoint = errors.New("storage: commit failed at fail point " + failpoint.StorageFailBeforeCommit)
	// ErrFailPointAfterCommit answers the requests of a committed group
	// when the failpoint StorageFailAfterCommit fires: their writes are
	// durable, their acknowledgements lost (fault tests only).
	ErrFailPointAfterCommit = errors.New("storage: acknowledgement lost at fail point " + failpoint.StorageFailAfterCommit)
)

// StoppedError answers every write once the disk failed a write or a sync
// of the write-ahead log (invariant "Stop on a failed log"). It carries the
// MongoDB code clients get: OutOfDiskSpace when the disk was full,
// ManualInterventionRequired otherwise.
type StoppedError struct {
	// Cause is the disk's error (errors.Is(err, syscall.EIO) sees through).
	Cause error
	// Since is when the disk failed.
	Since time.Time
	code  *mongoerr.Error
}

func newStoppedError(cause error, since time.Time) *StoppedError {
	code, what := mongoerr.ManualInterventionRequired, "check the disk"
	if errors.Is(cause, syscall.ENOSPC) {
		code, what = mongoerr.OutOfDiskSpace, "free space on the disk"
	}
	msg := fmt.Sprintf("storage: writes stopped at %s: the disk failed the write-ahead log (%v); "+
		"writes acknowledged before are safe, the failed ones were not acknowledged and may or may not be kept; "+
		"%s, then restart cairn", since.UTC().Format(time.RFC3339), cause, what)
	return &StoppedError{Cause: cause, Since: since, code: mongoerr.New(code, "%s", msg)}
}

func (e *StoppedError) Error() string { return e.code.Msg }

// Unwrap gives the disk's error and the MongoDB error the command layer replies with.
func (e *StoppedError) Unwrap() []error { return []error{e.Cause, e.code} }

// ErrDiskFull refuses a write while the disk holding the store has less free
// space than Options.MinFreeBytes; writes resume once space is freed. The
// error returned wraps it and a *mongoerr.Error with code OutOfDiskSpace.
var ErrDiskFull = errors.New("storage: the disk is full")

// diskFullError is ErrDiskFull with the figures, as clients get it.
type diskFullError struct{ code *mongoerr.Error }

func newDiskFullError(avail, min uint64) *diskFullError {
	return &diskFullError{mongoerr.New(mongoerr.OutOfDiskSpace,
		"storage: the disk is full: %d bytes free, below the %d Cairn keeps for flushes and compactions; "+
			"writes are refused until space is freed", avail, min)}
}

func (e *diskFullError) Error() string   { return e.code.Msg }
func (e *diskFullError) Unwrap() []error { return []error{ErrDiskFull, e.code} }
