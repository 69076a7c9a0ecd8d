package server_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestBackupProgressInCurrentOp: a createBackup in progress shows in
// currentOp with msg "Backup: N files, B bytes written" and progress
// {done, total} in bytes, done rising to what the reply reports (the
// createBackupPauseAfterFiles fail point holds it after its files are
// written, so the test sees it running; waitForFailPoint says when).
func TestBackupProgressInCurrentOp(t *testing.T) {
	s := startTestCommandsServer(t)
	c := s.client(t)
	ctx := context.Background()
	docs := make([]any, 2000)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "pad", Value: strings.Repeat("x", 200)}}
	}
	if _, err := c.Database("test").Collection("c").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	before, _ := configureFailPoint(t, c, bson.D{{Key: "configureFailPoint", Value: "createBackupPauseAfterFiles"}, {Key: "mode", Value: "alwaysOn"}}).Lookup("count").AsInt64OK()
	dir := filepath.Join(t.TempDir(), "backup")
	type result struct {
		reply bson.M
		err   error
	}
	done := make(chan result, 1)
	go func() {
		var r bson.M
		err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "createBackup", Value: 1}, {Key: "backupDir", Value: dir}}).Decode(&r)
		done <- result{r, err}
	}()
	// Progress is read once the fail point holds the backup (its files
	// written and measured): a tick's progress read earlier can come while
	// the checkpoint is still being written, short of the reply's count.
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "waitForFailPoint", Value: "createBackupPauseAfterFiles"},
		{Key: "timesEntered", Value: before + 1}, {Key: "maxTimeMS", Value: 60_000}}).Err(); err != nil {
		t.Fatal(err)
	}
	var cur struct {
		Inprog []struct {
			Command  bson.M `bson:"command"`
			Msg      string `bson:"msg"`
			Progress struct {
				Done  int64 `bson:"done"`
				Total int64 `bson:"total"`
			} `bson:"progress"`
		} `bson:"inprog"`
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "currentOp", Value: 1}}).Decode(&cur); err != nil {
		t.Fatal(err)
	}
	var msg string
	var doneBytes, total int64
	for _, op := range cur.Inprog {
		if _, ok := op.Command["createBackup"]; ok {
			msg, doneBytes, total = op.Msg, op.Progress.Done, op.Progress.Total
		}
	}
	if doneBytes == 0 {
		t.Fatal("the paused createBackup shows no progress in currentOp")
	}
	configureFailPoint(t, c, bson.D{{Key: "configureFailPoint", Value: "createBackupPauseAfterFiles"}, {Key: "mode", Value: "off"}})
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	bytes, _ := r.reply["bytes"].(int64)
	files, _ := r.reply["files"].(int64)
	if !strings.HasPrefix(msg, "Backup: ") || !strings.Contains(msg, " files, ") || doneBytes != bytes || total < doneBytes || files == 0 {
		t.Errorf("progress %q %d of %d; the reply says %d files, %d bytes", msg, doneBytes, total, files, bytes)
	}
}
