package storage

import (
	"errors"

	"github.com/cairndb/cairn/internal/failpoint"
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
