package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// runCluster is `cairn cluster up`: a local replica set of real `cairn
// serve --replSet` processes on loopback, initiated, until Ctrl-C.
func runCluster(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "up" {
		fmt.Fprintln(stderr, "Usage: cairn cluster up [--replicas N] [--port P] [--dbpath DIR] [--replSet NAME] [--setParameter NAME=VALUE]")
		return 2
	}
	fs := flag.NewFlagSet("cluster up", flag.ContinueOnError)
	fs.SetOutput(stderr)
	replicas := fs.Int("replicas", 3, "members of the replica set (1 to 7)")
	port := fs.Int("port", 27017, "the first member's port; the others take the next ones")
	dbpath := fs.String("dbpath", "./cairn-cluster", "directory holding one data directory per member")
	name := fs.String("replSet", "rs0", "the replica set's name")
	var params stringList
	fs.Var(&params, "setParameter", "NAME=VALUE passed to every member's serve (repeatable), e.g. enableTestCommands=1")
	if err := fs.Parse(args[1:]); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if *replicas < 1 || *replicas > 7 {
		fmt.Fprintln(stderr, "cairn cluster up: --replicas must be from 1 to 7")
		return 2
	}
	if err := clusterUp(*replicas, *port, *dbpath, *name, params, stdout); err != nil {
		fmt.Fprintln(stderr, "cairn cluster up:", err)
		return 1
	}
	return 0
}

func clusterUp(n, port int, root, name string, params []string, out io.Writer) error {
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	root, err = filepath.Abs(root)
	if err != nil {
		return err
	}
	var procs []*exec.Cmd
	defer func() {
		for _, p := range procs {
			_ = p.Process.Signal(syscall.SIGTERM)
		}
		for _, p := range procs {
			_ = p.Wait()
		}
		fmt.Fprintln(out, "stopped")
	}()
	hosts := make([]string, n)
	for i := range n {
		hosts[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(port+i))
		dir := filepath.Join(root, fmt.Sprintf("member%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		logf, err := os.Create(filepath.Join(root, fmt.Sprintf("member%d.log", i)))
		if err != nil {
			return err
		}
		defer logf.Close()
		args := []string{"serve", "--replSet", name, "--port", strconv.Itoa(port + i), "--dbpath", dir}
		for _, p := range params {
			args = append(args, "--setParameter", p)
		}
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			return err
		}
		procs = append(procs, cmd)
		fmt.Fprintf(out, "member %d: %s, data %s, log %s\n", i, hosts[i], dir, logf.Name())
	}
	for _, h := range hosts {
		if err := waitListening(h, 30*time.Second); err != nil {
			return err
		}
	}
	ctx := context.Background()
	first, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + hosts[0] + "/?directConnection=true"))
	if err != nil {
		return err
	}
	defer first.Disconnect(ctx)
	members := bson.A{}
	for i, h := range hosts {
		members = append(members, bson.D{{Key: "_id", Value: i}, {Key: "host", Value: h}})
	}
	err = first.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetInitiate", Value: bson.D{{Key: "_id", Value: name}, {Key: "members", Value: members}}}}).Err()
	if err != nil && !strings.Contains(err.Error(), "already initialized") {
		return fmt.Errorf("replSetInitiate: %w", err)
	}
	fmt.Fprint(out, "waiting for the members to join")
	deadline := time.Now().Add(60 * time.Second)
	for healthyMembers(ctx, hosts) < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("the members did not all join within 60s (see their logs)")
		}
		fmt.Fprint(out, ".")
		time.Sleep(250 * time.Millisecond)
	}
	fmt.Fprintf(out, "\nreplica set %s is up: mongodb://%s/?replicaSet=%s\nCtrl-C stops it.\n", name, strings.Join(hosts, ","), name)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	<-sigs
	return nil
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func waitListening(host string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		c, err := net.DialTimeout("tcp", host, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is not listening after %v", host, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// healthyMembers is how many members the primary reports PRIMARY or
// SECONDARY (0 when no member is primary yet).
func healthyMembers(ctx context.Context, hosts []string) int {
	for _, h := range hosts {
		c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + h + "/?directConnection=true").SetServerSelectionTimeout(time.Second))
		if err != nil {
			continue
		}
		var st struct {
			MyState int `bson:"myState"`
			Members []struct {
				State int `bson:"state"`
			} `bson:"members"`
		}
		err = c.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetGetStatus", Value: 1}}).Decode(&st)
		_ = c.Disconnect(ctx)
		if err != nil || st.MyState != 1 {
			continue
		}
		n := 0
		for _, m := range st.Members {
			if m.State == 1 || m.State == 2 {
				n++
			}
		}
		return n
	}
	return 0
}

// clusterCommand is `cairn cluster`, whose one subcommand (up) parses its
// own flags.
func clusterCommand(stdout, stderr io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "cluster up [--replicas N] [--port P] [--dbpath DIR] [--replSet NAME] [--setParameter NAME=VALUE]",
		Short: "Start a local replica set on loopback until Ctrl-C",
		Long: `cluster up starts a replica set of real 'cairn serve --replSet' processes on
loopback (ports from --port on, one data directory per member under
--dbpath), initiates it, prints the connection string (with replicaSet=)
and stops the members on Ctrl-C. Run 'cairn cluster up --help' for the flags.`,
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			if code := runCluster(args, stdout, stderr); code != 0 {
				return exitCode(code)
			}
			return nil
		},
	}
}
