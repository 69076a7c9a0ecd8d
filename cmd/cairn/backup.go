package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

const backupLong = `Takes an online, consistent backup of a running Cairn server: a copy of its
data directory as of one moment, holding every write acknowledged before the
backup began, while the server goes on serving reads and writes. Restore by
starting a server on it:

  cairn backup --uri mongodb://127.0.0.1:27017 --out /backups/2026-11-26
  cairn serve --dbpath /backups/2026-11-26

The server writes the backup itself (the createBackup command), so --out is
a path on the server's host; it must not exist or be an empty directory.
Where it is on the same filesystem as the data directory, unchanged data
files are hard-linked, not copied. Under --auth the user needs the fsync
privilege (hostManager, clusterManager or root).

mongodump and mongorestore work against Cairn too: they copy documents and
indexes, not files, and are not a point-in-time copy of a server taking
writes.`

func backupCommand(stdout io.Writer) *cobra.Command {
	var uri, out string
	var timeout, every time.Duration
	cmd := &cobra.Command{
		Use:   "backup --out DIR [--uri URI]",
		Short: "Take an online, consistent backup of a running server",
		Long:  backupLong,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usageError{fmt.Errorf("--out is required: the directory to write the backup to")}
			}
			dir, err := filepath.Abs(out)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			return backup(ctx, uri, dir, every, stdout)
		},
	}
	cmd.Flags().StringVar(&uri, "uri", "mongodb://127.0.0.1:27017", "the server to back up, as a MongoDB connection string (with credentials under --auth)")
	cmd.Flags().StringVar(&out, "out", "", "directory on the server's host to write the backup to (must not exist, or be empty)")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Hour, "give up after this long")
	cmd.Flags().DurationVar(&every, "progress", time.Second, "print the server's progress (files and bytes written, from currentOp) this often while the backup runs; 0 prints none")
	return cmd
}

func backup(ctx context.Context, uri, dir string, every time.Duration, stdout io.Writer) error {
	client, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		return err
	}
	defer client.Disconnect(context.Background())
	fmt.Fprintf(stdout, "backing up %s to %s ...\n", uri, dir)
	start := time.Now()
	if every > 0 {
		stop := make(chan struct{})
		finished := make(chan struct{})
		go func() {
			defer close(finished)
			watchBackup(ctx, client, dir, every, stop, stdout)
		}()
		defer func() { close(stop); <-finished }()
	}
	var reply struct {
		Files int64 `bson:"files"`
		Bytes int64 `bson:"bytes"`
	}
	err = client.Database("admin").RunCommand(ctx, bson.D{{Key: "createBackup", Value: 1}, {Key: "backupDir", Value: dir}}).Decode(&reply)
	if err != nil {
		return fmt.Errorf("backup failed: %w", err)
	}
	fmt.Fprintf(stdout, "backup done in %s: %d files, %d bytes in %s\nrestore with: cairn serve --dbpath %s\n",
		time.Since(start).Round(time.Millisecond), reply.Files, reply.Bytes, dir, dir)
	return nil
}

// watchBackup prints the createBackup writing dir's progress, as currentOp
// reports it, every interval until stop (a line only when it changed).
func watchBackup(ctx context.Context, client *mongo.Client, dir string, every time.Duration, stop <-chan struct{}, stdout io.Writer) {
	t := time.NewTicker(every)
	defer t.Stop()
	last := ""
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		var cur struct {
			Inprog []struct {
				Command struct {
					BackupDir string `bson:"backupDir"`
				} `bson:"command"`
				Msg      string `bson:"msg"`
				Progress struct {
					Done  int64 `bson:"done"`
					Total int64 `bson:"total"`
				} `bson:"progress"`
			} `bson:"inprog"`
		}
		if client.Database("admin").RunCommand(ctx, bson.D{{Key: "currentOp", Value: 1}}).Decode(&cur) != nil {
			continue // progress is a courtesy: the backup's own reply decides
		}
		for _, op := range cur.Inprog {
			if op.Command.BackupDir != dir || op.Msg == "" {
				continue
			}
			line := "  " + strings.TrimPrefix(op.Msg, "Backup: ")
			if op.Progress.Total > 0 {
				line += fmt.Sprintf(" (about %d%% of %d bytes)", min(100, op.Progress.Done*100/op.Progress.Total), op.Progress.Total)
			}
			if line != last {
				fmt.Fprintln(stdout, line)
				last = line
			}
		}
	}
}
