package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

const adviseLong = `Asks a running Cairn server for data-model advice (the advise command) and
prints it as a report: for each collection, what a random sample of its
documents, its indexes and their use, and the query shapes the profiler
recorded say about the model, each finding with its evidence, a severity and
a concrete change.

  cairn advise --uri mongodb://127.0.0.1:27017 --db shop
  cairn advise --db shop --collection orders --sample-size 5000
  cairn advise --db shop --json            # the command's reply, for tools

What it looks for: maps keyed by ids (field names that are data) and the
arrays that copy their keys; identities glued into string _ids that repeat
other fields; each version of a record kept as its own document; arrays
that grow without bound and arrays nested in arrays; query shapes that
examine far more than they return, with the index that would serve them;
unused and redundant indexes; and shard-key candidates with the unique
indexes that would block them. Query shapes come from the server's own
sampled record (one command in ten, at most 1,000 shapes, kept in memory
since the server started) or, for a collection it has none of, from
system.profile (db.setProfilingLevel(1) or cairn serve --profile 1): let the
application run first. Sampling reads one snapshot and never blocks writers.`

func adviseCommand(stdout io.Writer) *cobra.Command {
	var uri, db, coll string
	var sample int
	var asJSON bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "advise --db DB [--collection C] [--uri URI]",
		Short: "Report data-model advice for a database or collection",
		Long:  adviseLong,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if db == "" {
				return usageError{fmt.Errorf("--db is required: the database to advise on")}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			return adviseRun(ctx, uri, db, coll, sample, asJSON, stdout)
		},
	}
	cmd.Flags().StringVar(&uri, "uri", "mongodb://127.0.0.1:27017", "the server, as a MongoDB connection string")
	cmd.Flags().StringVar(&db, "db", "", "the database to advise on")
	cmd.Flags().StringVar(&coll, "collection", "", "one collection (default: every collection of the database)")
	cmd.Flags().IntVar(&sample, "sample-size", 1000, "documents sampled per collection (1 to 100000)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the command's reply as extended JSON instead of a report")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "give up after this long")
	return cmd
}

// adviseReply is the advise command's reply.
type adviseReply struct {
	Collections []struct {
		NS          string `bson:"ns"`
		Sampled     int64  `bson:"sampled"`
		QueryShapes []struct {
			Command  string   `bson:"command"`
			Equality []string `bson:"equality"`
			Range    []string `bson:"range"`
			Sort     []string `bson:"sort"`
			Runs     int64    `bson:"runs"`
			Examined int64    `bson:"examined"`
			Returned int64    `bson:"returned"`
		} `bson:"queryShapes"`
		ShapesFrom string `bson:"queryShapesFrom"`
		Findings   []struct {
			Kind       string   `bson:"kind"`
			Severity   string   `bson:"severity"`
			Path       string   `bson:"path"`
			Summary    string   `bson:"summary"`
			Evidence   bson.Raw `bson:"evidence"`
			Suggestion string   `bson:"suggestion"`
		} `bson:"findings"`
	} `bson:"collections"`
}

func adviseRun(ctx context.Context, uri, db, coll string, sample int, asJSON bool, stdout io.Writer) error {
	client, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		return err
	}
	defer client.Disconnect(context.Background())
	var target any = 1
	if coll != "" {
		target = coll
	}
	raw, err := client.Database(db).RunCommand(ctx, bson.D{{Key: "advise", Value: target}, {Key: "sampleSize", Value: sample}}).Raw()
	if err != nil {
		return fmt.Errorf("advise failed: %w", err)
	}
	if asJSON {
		js, err := bson.MarshalExtJSONIndent(raw, false, false, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", js)
		return err
	}
	var reply adviseReply
	if err := bson.Unmarshal(raw, &reply); err != nil {
		return err
	}
	for _, c := range reply.Collections {
		from := "the server's record"
		if c.ShapesFrom == "profiler" {
			from = "system.profile"
		}
		fmt.Fprintf(stdout, "%s: %d documents sampled, %d query shapes from %s\n", c.NS, c.Sampled, len(c.QueryShapes), from)
		if len(c.Findings) == 0 {
			fmt.Fprintln(stdout, "  no findings")
		}
		for _, f := range c.Findings {
			where := ""
			if f.Path != "" {
				where = " at " + f.Path
			}
			fmt.Fprintf(stdout, "  [%s] %s%s\n", strings.ToUpper(f.Severity), f.Kind, where)
			fmt.Fprintf(stdout, "      %s\n      → %s\n", f.Summary, f.Suggestion)
		}
		fmt.Fprintln(stdout)
	}
	return nil
}
