package storage

import (
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// defaultMinFreeBytes is the free space writes leave on the store's disk by
// default (Options.MinFreeBytes): room for Pebble to flush its memtables
// and compact, so that a disk filling up refuses writes with a clear error
// instead of failing the log.
const defaultMinFreeBytes = 128 << 20

// spaceCheckEvery is how often the pipeline asks the filesystem for its free
// space while there is plenty; within spaceCheckNear times the minimum it
// asks before every group, so refusals start and stop promptly.
const (
	spaceCheckEvery = 100 * time.Millisecond
	spaceCheckNear  = 8
)

// spaceCheck refuses writes while the disk's free space is below min. It is
// used by the pipeline goroutine only.
type spaceCheck struct {
	fs   vfs.FS
	dir  string
	min  uint64
	off  bool
	next time.Time // no check needed before this
}

func newSpaceCheck(fs vfs.FS, dir string, min int64) *spaceCheck {
	return &spaceCheck{fs: fs, dir: dir, min: uint64(max(min, 0)), off: min < 0}
}

// check returns a disk-full error when a group may not be written.
func (c *spaceCheck) check() error {
	if c.off {
		return nil
	}
	now := time.Now()
	if now.Before(c.next) {
		return nil
	}
	u, err := c.fs.GetDiskUsage(c.dir)
	if err != nil {
		// The filesystem cannot tell (an in-memory one): nothing to check.
		c.next = now.Add(spaceCheckEvery)
		return nil
	}
	if u.AvailBytes < c.min {
		return newDiskFullError(u.AvailBytes, c.min)
	}
	if u.AvailBytes >= spaceCheckNear*c.min {
		c.next = now.Add(spaceCheckEvery)
	}
	return nil
}
