package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
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

	"github.com/cairndb/cairn/internal/auth"
	"github.com/cairndb/cairn/internal/config"
	"github.com/cairndb/cairn/internal/tlsconn"
)

// runCluster is `cairn cluster up`: a local replica set of real `cairn
// serve --replSet` processes on loopback, initiated, until Ctrl-C; with
// --shards, a sharded cluster: a config server replica set, that many
// shard replica sets and --routers routers, the shards added.
func runCluster(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "up" {
		fmt.Fprintln(stderr, "Usage: cairn cluster up [--replicas N] [--shards S --routers K] [--port P] [--dbpath DIR] [--replSet NAME] [--setParameter NAME=VALUE] [--keyFile FILE] [--generateKeyFile] [--auth] [--user NAME --password PW]")
		return 2
	}
	fs := flag.NewFlagSet("cluster up", flag.ContinueOnError)
	fs.SetOutput(stderr)
	replicas := fs.Int("replicas", 3, "members of each replica set (1 to 7)")
	shards := fs.Int("shards", 0, "shard replica sets of a sharded cluster (0: one plain replica set)")
	routers := fs.Int("routers", 1, "routers of a sharded cluster")
	port := fs.Int("port", 27017, "the first process's port; the others take the next ones")
	dbpath := fs.String("dbpath", "./cairn-cluster", "directory holding one data directory per member")
	name := fs.String("replSet", "rs0", "the replica set's name (without --shards)")
	var params stringList
	fs.Var(&params, "setParameter", "NAME=VALUE passed to every replica set member's serve (repeatable), e.g. enableTestCommands=1")
	keyFile := fs.String("keyFile", "", "the cluster's shared key, passed to every member and router (access control on: members authenticate to each other as __system, clients must authenticate)")
	genKey := fs.Bool("generateKeyFile", false, "write a new random key to --keyFile's path (default <dbpath>/keyfile, readable by its owner only) unless that file exists, and use it")
	authOn := fs.Bool("auth", false, "access control: as --generateKeyFile when no --keyFile is given (members of a replica set need the key, as mongod's)")
	user := fs.String("user", "", "with access control, a first user with the root role, made through the localhost exception once the cluster is up (needs --password)")
	password := fs.String("password", "", "the first user's password")
	tlsOpts := config.TLS{}
	fs.StringVar(&tlsOpts.Mode, "tlsMode", config.TLSDisabled, "every member's and router's --tlsMode: under preferTLS and requireTLS they connect to each other with TLS, and so does cluster up")
	fs.StringVar(&tlsOpts.CertificateKeyFile, "tlsCertificateKeyFile", "", "the PEM certificate and key every member and router presents (to clients and to each other: give it both the serverAuth and clientAuth extended key usages)")
	fs.StringVar(&tlsOpts.CAFile, "tlsCAFile", "", "the PEM certificate authorities certificates are checked against (with it, clients must present a certificate)")
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
	if *shards < 0 || *shards > 32 || *shards > 0 && (*routers < 1 || *routers > 16) {
		fmt.Fprintln(stderr, "cairn cluster up: --shards must be from 0 to 32 and --routers from 1 to 16")
		return 2
	}
	if err := tlsOpts.Validate(); err != nil {
		fmt.Fprintln(stderr, "cairn cluster up:", err)
		return 2
	}
	if (*user == "") != (*password == "") {
		fmt.Fprintln(stderr, "cairn cluster up: --user and --password go together")
		return 2
	}
	if *authOn && *keyFile == "" {
		*genKey = true
	}
	if *user != "" && *keyFile == "" && !*genKey {
		fmt.Fprintln(stderr, "cairn cluster up: --user needs access control: give --keyFile, --generateKeyFile or --auth")
		return 2
	}
	cl := &localCluster{out: stdout, replicas: *replicas, nextPort: *port, plain: *shards == 0, params: params}
	err := cl.setup(*dbpath, func() error {
		if err := cl.useKey(*keyFile, *genKey); err != nil {
			return err
		}
		if err := cl.useTLS(tlsOpts); err != nil {
			return err
		}
		if *shards == 0 {
			hosts, err := cl.replicaSet(*name, "")
			if err != nil {
				return err
			}
			uri := cl.clientURI("mongodb://" + strings.Join(hosts, ",") + "/?replicaSet=" + *name)
			if err := cl.firstUser(uri, *user, *password); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "replica set %s is up: %s\n", *name, cl.userURI(uri, *user))
			return nil
		}
		return cl.sharded(*shards, *routers, *user, *password)
	})
	if err == nil {
		fmt.Fprintln(stdout, "Ctrl-C stops it.")
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
		<-sigs
	}
	cl.stop()
	if err != nil {
		fmt.Fprintln(stderr, "cairn cluster up:", err)
		return 1
	}
	return 0
}

// localCluster is the processes `cairn cluster up` started.
type localCluster struct {
	out      io.Writer
	bin      string
	root     string
	replicas int
	nextPort int
	procs    []*exec.Cmd
	logs     []*os.File
	plain    bool     // one replica set, no shards
	params   []string // --setParameter NAME=VALUE for every member
	// keyFile and key are the cluster's shared key ("": none): every
	// member and router gets --keyFile, and cluster up itself connects as
	// __system with the key.
	keyFile, key string
	// tlsArgs are every member's and router's --tls options (none: plain);
	// tlsClient and tlsQuery are how cluster up and the printed connection
	// strings connect under preferTLS and requireTLS (nil, "": plain).
	tlsArgs   []string
	tlsClient *tls.Config
	tlsQuery  string
}

// useTLS takes the --tls options: absolute paths passed to every process,
// and TLS for cluster up's own connections and the connection strings it
// prints when the processes connect to each other with it.
func (c *localCluster) useTLS(t config.TLS) error {
	if t.Mode == config.TLSDisabled {
		return nil
	}
	for _, p := range []*string{&t.CertificateKeyFile, &t.CAFile} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		*p = abs
	}
	c.tlsArgs = []string{"--tlsMode", t.Mode, "--tlsCertificateKeyFile", t.CertificateKeyFile}
	if t.CAFile != "" {
		c.tlsArgs = append(c.tlsArgs, "--tlsCAFile", t.CAFile)
	}
	if !tlsconn.DialsTLS(t.Mode) {
		return nil
	}
	cfg, err := tlsconn.Member(tlsconn.Files{CertificateKeyFile: t.CertificateKeyFile, CAFile: t.CAFile})
	if err != nil {
		return err
	}
	c.tlsClient = cfg
	q := url.Values{"tls": {"true"}, "tlsCertificateKeyFile": {t.CertificateKeyFile}}
	if t.CAFile != "" {
		q.Set("tlsCAFile", t.CAFile)
	}
	c.tlsQuery = q.Encode()
	fmt.Fprintf(c.out, "TLS (%s): every member and router presents %s\n", t.Mode, t.CertificateKeyFile)
	return nil
}

// clientURI is uri with the TLS options a client needs (none without).
func (c *localCluster) clientURI(uri string) string {
	switch {
	case c.tlsQuery == "":
		return uri
	case strings.Contains(uri, "?"):
		return uri + "&" + c.tlsQuery
	default:
		return uri + "?" + c.tlsQuery
	}
}

// useKey sets the cluster's key file: path, or with generate a new random
// key at path (default <root>/keyfile) unless the file exists.
func (c *localCluster) useKey(path string, generate bool) error {
	if path == "" && !generate {
		return nil
	}
	if path == "" {
		path = filepath.Join(c.root, "keyfile")
	}
	path, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	if _, err := os.Stat(path); generate && errors.Is(err, os.ErrNotExist) {
		raw := make([]byte, 756) // as `openssl rand -base64 756`
		if _, err := rand.Read(raw); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(raw)+"\n"), 0o400); err != nil {
			return err
		}
		fmt.Fprintf(c.out, "generated key file %s\n", path)
	}
	key, err := auth.ReadKeyFile(path)
	if err != nil {
		return err
	}
	c.keyFile, c.key = path, string(key)
	fmt.Fprintf(c.out, "access control on: every member and router uses key file %s\n", path)
	return nil
}

// connect is a client of uri; with a key it authenticates as __system.
func (c *localCluster) connect(uri string, timeout time.Duration) (*mongo.Client, error) {
	opts := options.Client().ApplyURI(uri).SetServerSelectionTimeout(timeout)
	if c.tlsClient != nil {
		opts.SetTLSConfig(c.tlsClient)
	}
	if c.key != "" {
		opts.SetAuth(options.Credential{Username: "__system", Password: c.key, AuthSource: "local", AuthMechanism: "SCRAM-SHA-256"})
	}
	return mongo.Connect(opts)
}

// firstUser makes user (role root) through the localhost exception, as
// one does with mongod: an unauthenticated client on loopback while no
// user exists. Without user it says how. uri is clientURI's (it carries
// the TLS options a client needs).
func (c *localCluster) firstUser(uri, user, password string) error {
	if c.key == "" {
		return nil
	}
	if user == "" {
		fmt.Fprintf(c.out, "no user yet: create the first one from this host (the localhost exception), e.g. mongosh %q --eval 'db.getSiblingDB(\"admin\").createUser({user: \"admin\", pwd: passwordPrompt(), roles: [\"root\"]})'\n", uri)
		return nil
	}
	ctx := context.Background()
	cl, err := mongo.Connect(options.Client().ApplyURI(uri).SetServerSelectionTimeout(30 * time.Second))
	if err != nil {
		return err
	}
	defer cl.Disconnect(ctx)
	err = cl.Database("admin").RunCommand(ctx, bson.D{{Key: "createUser", Value: user}, {Key: "pwd", Value: password}, {Key: "roles", Value: bson.A{"root"}}}).Err()
	if err != nil {
		return fmt.Errorf("creating the first user %s: %w", user, err)
	}
	fmt.Fprintf(c.out, "created user %s (root) on admin\n", user)
	return nil
}

// userURI is uri with user's name and authSource=admin (no password).
func (c *localCluster) userURI(uri, user string) string {
	if user == "" {
		return uri
	}
	uri = strings.Replace(uri, "mongodb://", "mongodb://"+user+"@", 1)
	if strings.Contains(uri, "?") {
		return uri + "&authSource=admin"
	}
	return uri + "?authSource=admin"
}

func (c *localCluster) setup(root string, up func() error) error {
	var err error
	if c.bin, err = os.Executable(); err != nil {
		return err
	}
	if c.root, err = filepath.Abs(root); err != nil {
		return err
	}
	return up()
}

// start runs the cairn binary with args, logging to <root>/<name>.log, on
// the next port.
func (c *localCluster) start(name string, args ...string) (string, error) {
	host := net.JoinHostPort("127.0.0.1", strconv.Itoa(c.nextPort))
	args = append(args, "--port", strconv.Itoa(c.nextPort))
	c.nextPort++
	if err := os.MkdirAll(c.root, 0o755); err != nil {
		return "", err
	}
	logf, err := os.Create(filepath.Join(c.root, name+".log"))
	if err != nil {
		return "", err
	}
	c.logs = append(c.logs, logf)
	cmd := exec.Command(c.bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return "", err
	}
	c.procs = append(c.procs, cmd)
	return host, nil
}

// stop ends every process (SIGTERM, then waits), routers first.
func (c *localCluster) stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		_ = c.procs[i].Process.Signal(syscall.SIGTERM)
		_ = c.procs[i].Wait()
	}
	for _, f := range c.logs {
		f.Close()
	}
	if len(c.procs) > 0 {
		fmt.Fprintln(c.out, "stopped")
	}
}

// replicaSet starts and initiates a replica set of c.replicas members.
// role is "configsvr", "shardsvr" or "" (a plain replica set).
func (c *localCluster) replicaSet(name, role string) ([]string, error) {
	configsvr := role == "configsvr"
	hosts := make([]string, c.replicas)
	for i := range hosts {
		member := fmt.Sprintf("%s-member%d", name, i)
		if c.plain {
			member = fmt.Sprintf("member%d", i) // the layout of a plain replica set's directory since it first ran
		}
		dir := filepath.Join(c.root, member)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		args := []string{"serve", "--replSet", name, "--dbpath", dir}
		for _, p := range c.params {
			args = append(args, "--setParameter", p)
		}
		if role != "" {
			args = append(args, "--"+role)
		}
		if c.keyFile != "" {
			args = append(args, "--keyFile", c.keyFile)
		}
		args = append(args, c.tlsArgs...)
		h, err := c.start(member, args...)
		if err != nil {
			return nil, err
		}
		hosts[i] = h
		fmt.Fprintf(c.out, "%s member %d: %s, pid %d, data %s, log %s\n", name, i, h, c.procs[len(c.procs)-1].Process.Pid, dir, filepath.Join(c.root, member+".log"))
	}
	for _, h := range hosts {
		if err := waitListening(h, 30*time.Second); err != nil {
			return nil, err
		}
	}
	ctx := context.Background()
	first, err := c.connect("mongodb://"+hosts[0]+"/?directConnection=true", 30*time.Second)
	if err != nil {
		return nil, err
	}
	defer first.Disconnect(ctx)
	members := bson.A{}
	for i, h := range hosts {
		members = append(members, bson.D{{Key: "_id", Value: i}, {Key: "host", Value: h}})
	}
	cfg := bson.D{{Key: "_id", Value: name}, {Key: "members", Value: members}}
	if configsvr {
		cfg = append(cfg, bson.E{Key: "configsvr", Value: true})
	}
	err = first.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetInitiate", Value: cfg}}).Err()
	if err != nil && !strings.Contains(err.Error(), "already initialized") {
		return nil, fmt.Errorf("replSetInitiate %s: %w", name, err)
	}
	fmt.Fprintf(c.out, "waiting for %s's members to join", name)
	deadline := time.Now().Add(60 * time.Second)
	for {
		n, primary := c.healthyMembers(ctx, hosts)
		if n == len(hosts) {
			fmt.Fprintln(c.out)
			// Printed for whoever places the set's processes (bench-replset's
			// RS_BENCH_PIN): it holds until an election moves it.
			fmt.Fprintf(c.out, "%s's primary: %s\n", name, primary)
			return hosts, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the members of %s did not all join within 60s (see their logs)", name)
		}
		fmt.Fprint(c.out, ".")
		time.Sleep(250 * time.Millisecond)
	}
}

// sharded starts the config servers, the shards and the routers, and adds
// the shards through the first router.
func (c *localCluster) sharded(shards, routers int, user, password string) error {
	cfgHosts, err := c.replicaSet("config", "configsvr")
	if err != nil {
		return err
	}
	configDB := "config/" + strings.Join(cfgHosts, ",")
	var shardConns []string
	for i := range shards {
		name := fmt.Sprintf("shard%d", i)
		hosts, err := c.replicaSet(name, "shardsvr")
		if err != nil {
			return err
		}
		shardConns = append(shardConns, name+"/"+strings.Join(hosts, ","))
	}
	var routerHosts []string
	for i := range routers {
		args := []string{"router", "--configdb", configDB}
		if c.keyFile != "" {
			args = append(args, "--keyFile", c.keyFile)
		}
		args = append(args, c.tlsArgs...)
		h, err := c.start(fmt.Sprintf("router%d", i), args...)
		if err != nil {
			return err
		}
		if err := waitListening(h, 30*time.Second); err != nil {
			return err
		}
		routerHosts = append(routerHosts, h)
		fmt.Fprintf(c.out, "router %d: %s\n", i, h)
	}
	ctx := context.Background()
	rc, err := c.connect("mongodb://"+routerHosts[0]+"/", 30*time.Second)
	if err != nil {
		return err
	}
	defer rc.Disconnect(ctx)
	for _, s := range shardConns {
		if err := rc.Database("admin").RunCommand(ctx, bson.D{{Key: "addShard", Value: s}}).Err(); err != nil {
			return fmt.Errorf("addShard %s: %w", s, err)
		}
		fmt.Fprintf(c.out, "added shard %s\n", s)
	}
	uri := c.clientURI("mongodb://" + strings.Join(routerHosts, ",") + "/")
	if err := c.firstUser(uri, user, password); err != nil {
		return err
	}
	fmt.Fprintf(c.out, "sharded cluster is up: %s\n", c.userURI(uri, user))
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
// SECONDARY (0 when no member is primary yet), and the primary's host.
func (lc *localCluster) healthyMembers(ctx context.Context, hosts []string) (int, string) {
	for _, h := range hosts {
		c, err := lc.connect("mongodb://"+h+"/?directConnection=true", time.Second)
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
		return n, h
	}
	return 0, ""
}

// clusterCommand is `cairn cluster`, whose one subcommand (up) parses its
// own flags.
func clusterCommand(stdout, stderr io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "cluster up [--replicas N] [--shards S --routers K] [--port P] [--dbpath DIR] [--replSet NAME] [--setParameter NAME=VALUE] [--keyFile FILE] [--generateKeyFile] [--auth] [--user NAME --password PW]",
		Short: "Start a local replica set or sharded cluster on loopback until Ctrl-C",
		Long: `cluster up starts a replica set of real 'cairn serve --replSet' processes on
loopback (ports from --port on, one data directory per member under
--dbpath), initiates it, prints the connection string (with replicaSet=)
and stops the members on Ctrl-C. With --shards S it starts a sharded
cluster instead: a config server replica set (--configsvr), S shard replica
sets and --routers 'cairn router' processes, each set of --replicas
members, adds the shards and prints the routers' connection string. With
--keyFile FILE (or --generateKeyFile, or --auth) every member and router
runs with that key: access control is on, members authenticate to each
other as __system, and --user/--password make a first root user through
the localhost exception. Run 'cairn cluster up --help' for the flags.`,
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			if code := runCluster(args, stdout, stderr); code != 0 {
				return exitCode(code)
			}
			return nil
		},
	}
}
