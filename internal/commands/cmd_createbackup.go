package commands

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// cmdCreateBackup serves createBackup (the hot backup command of Percona
// Server for MongoDB, which `cairn backup` sends): {createBackup: 1,
// backupDir: "/abs/path"} writes a consistent copy of the data directory,
// as of one moment and holding every write acknowledged before the command
// was received, to backupDir on the server's host, while reads and writes go
// on. `cairn serve --dbpath <backupDir>` starts from it. backupDir must be
// an absolute path that does not exist or is an empty directory.
func cmdCreateBackup(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	dir, err := req.String("backupDir", "")
	if err != nil {
		return nil, err
	}
	if dir == "" {
		return nil, mongoerr.New(mongoerr.BadValue, "createBackup needs backupDir, an absolute path on the server's host")
	}
	if !filepath.IsAbs(dir) {
		return nil, mongoerr.New(mongoerr.BadValue, "backupDir must be an absolute path, got %q", dir)
	}
	if entries, err := os.ReadDir(dir); err == nil {
		if len(entries) > 0 {
			return nil, mongoerr.New(mongoerr.BadValue, "backupDir %s is not empty", dir)
		}
		// The checkpoint makes the directory itself.
		if err := os.Remove(dir); err != nil {
			return nil, mongoerr.New(mongoerr.BadValue, "cannot use backupDir %s: %v", dir, err)
		}
	} else if !os.IsNotExist(err) {
		return nil, mongoerr.New(mongoerr.BadValue, "cannot use backupDir %s: %v", dir, err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, mongoerr.New(mongoerr.BadValue, "cannot create the parent of backupDir %s: %v", dir, err)
	}
	start := time.Now()
	stopProgress := s.backupProgress(dir)
	err = s.Env.Engine.Storage().Checkpoint(dir)
	files, bytes := stopProgress()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, mongoerr.New(mongoerr.InternalError, "backup to %s failed: %v", dir, err)
	}
	s.Env.Log.Info("backup written", "backupDir", dir, "files", files, "bytes", bytes, "durationMillis", time.Since(start).Milliseconds())
	return NewReply(dst).String("backupDir", dir).Int64("files", files).Int64("bytes", bytes).Finish(), nil
}

// backupProgressInterval is how often a backup's progress is measured.
const backupProgressInterval = 100 * time.Millisecond

// backupProgress reports a backup's progress in currentOp as it goes:
// progress {done, total} in bytes (total: the store's disk usage when the
// backup began, an estimate: the copy holds what is live at its moment)
// and msg "Backup: N files, B bytes written". The backup directory is
// measured every backupProgressInterval (the checkpoint is Pebble's one
// call, which reports nothing itself), and while the fail point
// createBackupPauseAfterFiles holds, after the files are written and
// synced and before the reply (for tests to watch the progress). stop ends the
// reporting and returns the final count of files and bytes.
func (s *Session) backupProgress(dir string) (stop func() (files, bytes int64)) {
	op := s.running.Load()
	total := int64(s.Env.Engine.Storage().Pebble().Metrics().DiskSpaceUsage())
	measure := func() (files, bytes int64) {
		_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				files++
				bytes += fi.Size()
			}
			return nil
		})
		if op != nil {
			op.SetProgress(fmt.Sprintf("Backup: %d files, %d bytes written", files, bytes), bytes, max(total, bytes))
		}
		return files, bytes
	}
	if op != nil {
		op.SetProgress("Backup: starting", 0, total)
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(backupProgressInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				measure()
			}
		}
	}()
	return func() (int64, int64) {
		close(done)
		<-finished
		files, bytes := measure()
		// A test's pause: the files are there, the command not finished.
		for {
			if _, on := s.Env.FailPoints.Define(backupPauseFailPoint).Eval(nil); !on {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		return files, bytes
	}
}

// backupPauseFailPoint holds a createBackup after its files are written.
const backupPauseFailPoint = "createBackupPauseAfterFiles"
