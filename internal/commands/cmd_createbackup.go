package commands

import (
	"context"
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
	if err := s.Env.Engine.Storage().Checkpoint(dir); err != nil {
		_ = os.RemoveAll(dir)
		return nil, mongoerr.New(mongoerr.InternalError, "backup to %s failed: %v", dir, err)
	}
	var files, bytes int64
	_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			files++
			bytes += fi.Size()
		}
		return nil
	})
	s.Env.Log.Info("backup written", "backupDir", dir, "files", files, "bytes", bytes, "durationMillis", time.Since(start).Milliseconds())
	return NewReply(dst).String("backupDir", dir).Int64("files", files).Int64("bytes", bytes).Finish(), nil
}
