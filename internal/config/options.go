package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Options are what a server starts with. The zero value is not useful: start
// from Defaults.
type Options struct {
	Port      int
	BindIP    string
	BindIPAll bool
	MaxConns  int
	// Compressors are the wire compressors offered, in preference order
	// (net.compression.compressors); "disabled" leaves it empty.
	Compressors []string

	DBPath string
	// CacheSizeGB is the block cache in GB; 0 is the default size.
	CacheSizeGB float64
	// DocumentCacheSizeMB is the part of the cache that holds whole
	// documents for point reads (Cairn's own): -1 the default share (an
	// eighth of the cache, at most 1 GiB), 0 none.
	DocumentCacheSizeMB int64
	// Sync is "always" or a log sync interval such as "100ms" (Cairn's own).
	Sync string
	// ReplSetName makes the server a member of that replica set
	// (replication.replSetName, --replSet); "" is a standalone.
	ReplSetName string
	// ShardSvr makes the server a shard of a sharded cluster
	// (sharding.clusterRole: shardsvr, --shardsvr): it takes _addShard,
	// checks shard versions and donates and receives chunks.
	ShardSvr bool
	// OplogSizeMB caps local.oplog.rs (replication.oplogSizeMB,
	// --oplogSize); 0 is mongod's default (5% of the disk, 990 MB to 50 GB).
	OplogSizeMB int64
	// ClusterRole is sharding.clusterRole: "configsvr" (--configsvr) makes
	// the replica set member a config server of a sharded cluster; "" is
	// no role.
	ClusterRole string

	// LogPath is the log file; "" logs to standard output.
	LogPath   string
	LogAppend bool
	// LogRotate is what logRotate and SIGUSR1 do: "rename" (the default)
	// or "reopen".
	LogRotate string
	Quiet     bool
	// Verbosity above 0 logs at debug level (systemLog.verbosity, -v).
	Verbosity int
	// LogLevel is Cairn's --log-level: debug, info, warn or error.
	LogLevel string

	Auth bool
	// Audit is auditLog: MongoDB Enterprise's audit log (package audit).
	Audit Audit

	// KeyFile is the shared secret members authenticate with
	// (security.keyFile); it implies Auth.
	KeyFile string

	// Profile is the profiling level of every database at startup (0, 1, 2).
	Profile        int
	SlowMS         int
	SlowSampleRate float64

	// SetParameters are name=value settings, the file's first, in order.
	SetParameters []string

	PIDFilePath  string
	TimeZoneInfo string

	TLS TLS

	// MetricsAddr serves Prometheus metrics when set (Cairn's own).
	MetricsAddr string
	// IDPrefix is the sequential document id prefix; -1 keeps the stored one.
	IDPrefix int

	// ConfigFile is the file the options were read from ("" if none).
	ConfigFile string
	// Given are the options the file and the flags gave, each as its
	// config file path and its value, in order; a path given again moves
	// to the end with its new value (getCmdLineOpts's parsed).
	Given [][2]string
}

// give records that path was given value.
func (o *Options) give(path, value string) {
	for i, g := range o.Given {
		if g[0] == path {
			o.Given = append(o.Given[:i], o.Given[i+1:]...)
			break
		}
	}
	o.Given = append(o.Given, [2]string{path, value})
}

// TLS is net.tls: how the listener speaks TLS.
type TLS struct {
	// Mode is disabled, allowTLS, preferTLS or requireTLS.
	Mode                     string
	CertificateKeyFile       string
	CAFile                   string
	AllowInvalidCertificates bool
	// AllowConnectionsWithoutCertificates lets clients without a
	// certificate connect when CAFile is set.
	AllowConnectionsWithoutCertificates bool
}

// Audit is the auditLog section.
type Audit struct {
	Destination, Format, Path, Filter string
}

// TLS modes, as mongod's --tlsMode.
const (
	TLSDisabled = "disabled"
	TLSAllow    = "allowTLS"
	TLSPrefer   = "preferTLS"
	TLSRequire  = "requireTLS"
)

// Default values that other packages name.
const (
	DefaultPort     = 27017
	DefaultBindIP   = "127.0.0.1"
	DefaultDBPath   = "./cairn-data"
	DefaultMaxConns = 10_000
	DefaultSlowMS   = 100
)

// Defaults are the options of a server started with no flag and no file:
// loopback only, durable writes (invariant "Safe defaults").
func Defaults() Options {
	return Options{
		Port:           DefaultPort,
		BindIP:         DefaultBindIP,
		MaxConns:       DefaultMaxConns,
		Compressors:    []string{"snappy", "zstd", "zlib"},
		DBPath:         DefaultDBPath,
		Sync:           "always",
		LogRotate:      "rename",
		LogLevel:       "info",
		SlowMS:         DefaultSlowMS,
		SlowSampleRate: 1,
		TLS:            TLS{Mode: TLSDisabled},
		IDPrefix:       -1,

		DocumentCacheSizeMB: -1,
	}
}

// kind says how a flag takes its value.
type kind uint8

const (
	kindValue kind = iota // --name value or --name=value
	kindBool              // --name alone means true
	kindCount             // -v, -vv: each occurrence adds one
)

// option is one setting: where it is in mongod's YAML file (path; "" for
// command-line only) and which flags set it (flags; none for file only;
// the first is the documented name, the rest are aliases).
type option struct {
	path  string
	flags []string
	short string
	kind  kind
	// arg names the value in the help ("PORT"); usage explains it.
	arg, usage string
	set        func(o *Options, v string) error
}

// options is the table: every option Cairn honours (invariant "Accepted
// means honoured"). Keys are in the order `cairn serve --help` lists them.
var options = []option{
	{path: "net.port", flags: []string{"port"}, arg: "PORT", usage: "TCP port to listen on (default 27017; 0 picks a free port)", set: intField(func(o *Options) *int { return &o.Port }, 0, 65535)},
	{path: "net.bindIp", flags: []string{"bind_ip"}, arg: "ADDRESSES", usage: "addresses to listen on, comma-separated (default 127.0.0.1: this host only; 0.0.0.0 exposes the server to the network)", set: func(o *Options, v string) error {
		var list []string
		for _, a := range strings.Split(v, ",") {
			a = strings.TrimSpace(a)
			if a == "" {
				return fmt.Errorf("has an empty address in %q", v)
			}
			if strings.ContainsAny(a, " /") {
				return fmt.Errorf("has a malformed address %q", a)
			}
			list = append(list, a)
		}
		o.BindIP = strings.Join(list, ",")
		return nil
	}},
	{path: "net.bindIpAll", flags: []string{"bind_ip_all"}, kind: kindBool, usage: "listen on every IPv4 address (0.0.0.0)", set: boolField(func(o *Options) *bool { return &o.BindIPAll })},
	{path: "net.maxIncomingConnections", flags: []string{"maxConns", "max-conns"}, arg: "N", usage: "maximum concurrent client connections (default 10000); past it a new connection is closed without a reply, logged and counted in serverStatus.connections.rejected", set: intField(func(o *Options) *int { return &o.MaxConns }, 1, 1<<30)},
	{path: "net.compression.compressors", flags: []string{"networkMessageCompressors"}, arg: "LIST", usage: "wire compressors offered, in order: any of snappy, zstd, zlib, comma-separated, or disabled (default snappy,zstd,zlib)", set: func(o *Options, v string) error {
		if v == "disabled" {
			o.Compressors = []string{}
			return nil
		}
		var list []string
		for _, c := range strings.Split(v, ",") {
			c = strings.TrimSpace(c)
			switch c {
			case "snappy", "zstd", "zlib":
				list = append(list, c)
			default:
				return fmt.Errorf("unknown compressor %q (snappy, zstd, zlib or disabled)", c)
			}
		}
		o.Compressors = list
		return nil
	}},
	{path: "net.tls.mode", flags: []string{"tlsMode"}, arg: "MODE", usage: "disabled (default), allowTLS, preferTLS or requireTLS: whether clients may, should or must connect with TLS", set: enumField(func(o *Options) *string { return &o.TLS.Mode }, TLSDisabled, TLSAllow, TLSPrefer, TLSRequire)},
	{path: "net.tls.certificateKeyFile", flags: []string{"tlsCertificateKeyFile"}, arg: "FILE", usage: "PEM file with the server's certificate and its private key", set: stringField(func(o *Options) *string { return &o.TLS.CertificateKeyFile })},
	{path: "net.tls.CAFile", flags: []string{"tlsCAFile"}, arg: "FILE", usage: "PEM file of the certificate authorities that client certificates are checked against; with it, clients must present a valid certificate", set: stringField(func(o *Options) *string { return &o.TLS.CAFile })},
	{path: "net.tls.allowConnectionsWithoutCertificates", flags: []string{"tlsAllowConnectionsWithoutCertificates"}, kind: kindBool, usage: "with --tlsCAFile, let clients without a certificate connect too", set: boolField(func(o *Options) *bool { return &o.TLS.AllowConnectionsWithoutCertificates })},
	{path: "net.tls.allowInvalidCertificates", flags: []string{"tlsAllowInvalidCertificates"}, kind: kindBool, usage: "accept client certificates that do not verify (development only)", set: boolField(func(o *Options) *bool { return &o.TLS.AllowInvalidCertificates })},

	{path: "storage.dbPath", flags: []string{"dbpath"}, arg: "DIR", usage: "data directory, created if missing (default ./cairn-data)", set: stringField(func(o *Options) *string { return &o.DBPath })},
	{path: "storage.wiredTiger.engineConfig.cacheSizeGB", flags: []string{"cacheSizeGB", "wiredTigerCacheSizeGB"}, arg: "GB", usage: "block cache size in GB, from 0.25 to 10000 (default: the larger of half of (memory - 1 GB) and 256 MB, as mongod's WiredTiger cache)", set: func(o *Options, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0.25 || f > 10000 {
			return fmt.Errorf("must be from 0.25 to 10000, got %q", v)
		}
		o.CacheSizeGB = f
		return nil
	}},
	{path: "cairn.documentCacheSizeMB", flags: []string{"documentCacheSizeMB"}, arg: "MB", usage: "the part of the cache (--cacheSizeGB) that keeps whole documents for point reads by _id, in MB, at most half the cache; 0 turns it off (default: an eighth of the cache, at most 1024)", set: func(o *Options, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > 1<<24 {
			return fmt.Errorf("must be a number of megabytes from 0 (off) to %d, got %q", 1<<24, v)
		}
		o.DocumentCacheSizeMB = n
		return nil
	}},
	{path: "replication.replSetName", flags: []string{"replSet"}, arg: "NAME", usage: "run as a member of the named replica set (initiate it with rs.initiate() on one member); members talk to each other on this same port", set: stringField(func(o *Options) *string { return &o.ReplSetName })},
	{path: "sharding.clusterRole", flags: []string{"shardsvr"}, kind: kindBool, usage: "run as a shard of a sharded cluster (sharding.clusterRole: shardsvr); the config servers' addShard names it", set: func(o *Options, v string) error {
		switch v {
		case "shardsvr", "true":
			o.ShardSvr = true
		case "false":
			o.ShardSvr = false
		default:
			return fmt.Errorf("must be shardsvr, got %q", v)
		}
		return nil
	}},
	{path: "replication.oplogSizeMB", flags: []string{"oplogSize"}, arg: "MB", usage: "size cap of the oplog local.oplog.rs in MB (default, as mongod: 5% of the disk, at least 990 MB and at most 50 GB)", set: func(o *Options, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 || n > 1<<30 {
			return fmt.Errorf("must be a positive number of megabytes, got %q", v)
		}
		o.OplogSizeMB = n
		return nil
	}},
	{path: "sharding.clusterRole", arg: "configsvr", set: func(o *Options, v string) error {
		if v != "configsvr" {
			return fmt.Errorf("must be configsvr: a shard server (shardsvr) is not supported by this build of Cairn yet, got %q", v)
		}
		o.ClusterRole = v
		return nil
	}},
	{path: "cairn.sync", flags: []string{"sync"}, arg: "always|INTERVAL", usage: "'always' (default): acknowledge a write once it is synced to disk, so neither a crash nor a power cut loses it; " +
		"an interval such as 100ms: acknowledge once the operating system has it and sync that often (a crash of cairn loses no acknowledged write; a power cut loses at most the last interval's)", set: func(o *Options, v string) error {
		if _, err := SyncInterval(v); err != nil {
			return err
		}
		o.Sync = v
		return nil
	}},

	{path: "systemLog.destination", arg: "file", set: func(o *Options, v string) error {
		if v != "file" {
			return fmt.Errorf("must be file: Cairn logs to a file (systemLog.path) or to standard output; %q is not supported", v)
		}
		return nil
	}},
	{path: "systemLog.path", flags: []string{"logpath"}, arg: "FILE", usage: "log to this file instead of standard output", set: stringField(func(o *Options) *string { return &o.LogPath })},
	{path: "systemLog.logAppend", flags: []string{"logappend"}, kind: kindBool, usage: "append to an existing log file at startup instead of renaming it aside", set: boolField(func(o *Options) *bool { return &o.LogAppend })},
	{path: "systemLog.logRotate", flags: []string{"logRotate"}, arg: "rename|reopen", usage: "what the logRotate command and SIGUSR1 do: rename the log file aside and start a new one (default), or reopen it (for an outside logrotate)", set: enumField(func(o *Options) *string { return &o.LogRotate }, "rename", "reopen")},
	{path: "systemLog.quiet", flags: []string{"quiet"}, kind: kindBool, usage: "quiet mode: no connection events in the log, even at debug level", set: boolField(func(o *Options) *bool { return &o.Quiet })},
	{path: "systemLog.verbosity", flags: []string{"verbose"}, short: "v", kind: kindCount, usage: "more verbose logging (debug level); -vv and so on are accepted", set: func(o *Options, v string) error {
		if v == "+1" {
			o.Verbosity++
			return nil
		}
		return intField(func(o *Options) *int { return &o.Verbosity }, 0, 5)(o, v)
	}},
	{flags: []string{"log-level"}, arg: "LEVEL", usage: "debug, info (default), warn or error", set: enumField(func(o *Options) *string { return &o.LogLevel }, "debug", "info", "warn", "error")},

	{path: "security.authorization", arg: "enabled|disabled", set: func(o *Options, v string) error {
		switch v {
		case "enabled":
			o.Auth = true
		case "disabled":
			o.Auth = false
		default:
			return fmt.Errorf("must be enabled or disabled, got %q", v)
		}
		return nil
	}},
	{flags: []string{"auth"}, kind: kindBool, usage: "require clients to authenticate (SCRAM-SHA-256 or SCRAM-SHA-1) and check their roles' privileges; with no user yet, a client on this host may create the first one (the localhost exception) [security.authorization: enabled]", set: boolField(func(o *Options) *bool { return &o.Auth })},
	{path: "security.keyFile", flags: []string{"keyFile"}, arg: "FILE", usage: "the replica set's shared key (base64 characters, 6 to 1024 of them; readable by its owner only): members prove they hold it to each other, and the internal user __system@local authenticates with it over SCRAM; implies --auth", set: stringField(func(o *Options) *string { return &o.KeyFile })},
	{path: "auditLog.destination", flags: []string{"auditDestination"}, arg: "file|console|syslog", usage: "write an audit log (authentication, authorization failures, user and role changes, DDL, shutdown; a MongoDB Enterprise feature) to a file, standard output or syslog", set: enumField(func(o *Options) *string { return &o.Audit.Destination }, "file", "console", "syslog")},
	{path: "auditLog.format", flags: []string{"auditFormat"}, arg: "JSON|BSON", usage: "the audit file's format: JSON lines (default) or BSON documents", set: enumField(func(o *Options) *string { return &o.Audit.Format }, "JSON", "BSON")},
	{path: "auditLog.path", flags: []string{"auditPath"}, arg: "FILE", usage: "the audit file, for --auditDestination file", set: stringField(func(o *Options) *string { return &o.Audit.Path })},
	{path: "auditLog.filter", flags: []string{"auditFilter"}, arg: "JSON", usage: "a query document selecting the events audited, in extended JSON with quoted keys, e.g. '{\"atype\": {\"$in\": [\"authenticate\", \"dropCollection\"]}}' (default: all)", set: stringField(func(o *Options) *string { return &o.Audit.Filter })},
	{flags: []string{"configsvr"}, kind: kindBool, usage: "run as a config server of a sharded cluster: a replica set member (with --replSet, initiated with configsvr: true) holding the cluster's config database for 'cairn router --configdb' [sharding.clusterRole: configsvr]", set: func(o *Options, v string) error {
		if v == "true" {
			o.ClusterRole = "configsvr"
		}
		return nil
	}},
	{flags: []string{"noauth"}, kind: kindBool, usage: "no access control (the default)", set: func(o *Options, v string) error {
		on, err := strconv.ParseBool(v)
		if err == nil && on {
			o.Auth = false
		}
		return err
	}},

	{path: "operationProfiling.mode", arg: "off|slowOp|all", set: func(o *Options, v string) error {
		levels := map[string]int{"off": 0, "slowOp": 1, "all": 2}
		l, ok := levels[v]
		if !ok {
			return fmt.Errorf("must be off, slowOp or all, got %q", v)
		}
		o.Profile = l
		return nil
	}},
	{flags: []string{"profile"}, arg: "LEVEL", usage: "profiling level of every database: 0 off (default), 1 slow operations, 2 all [operationProfiling.mode: off, slowOp, all]", set: intField(func(o *Options) *int { return &o.Profile }, 0, 2)},
	{path: "operationProfiling.slowOpThresholdMs", flags: []string{"slowms"}, arg: "MS", usage: "operations slower than this are logged (\"Slow query\") and, at profiling level 1, profiled (default 100)", set: intField(func(o *Options) *int { return &o.SlowMS }, -1<<31, 1<<31-1)},
	{path: "operationProfiling.slowOpSampleRate", flags: []string{"slowOpSampleRate"}, arg: "RATE", usage: "fraction of slow operations logged and profiled, from 0 to 1 (default 1)", set: func(o *Options, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 1 {
			return fmt.Errorf("must be from 0 to 1, got %q", v)
		}
		o.SlowSampleRate = f
		return nil
	}},

	{path: "setParameter", flags: []string{"setParameter"}, arg: "NAME=VALUE", usage: "set a server parameter at startup (repeatable); enableTestCommands=1 enables configureFailPoint", set: func(o *Options, v string) error {
		if name, _, ok := strings.Cut(v, "="); !ok || name == "" {
			return fmt.Errorf("takes name=value, got %q", v)
		}
		o.SetParameters = append(o.SetParameters, v)
		return nil
	}},

	{path: "processManagement.pidFilePath", flags: []string{"pidfilepath"}, arg: "FILE", usage: "write the server's process id to this file (removed at a clean shutdown)", set: stringField(func(o *Options) *string { return &o.PIDFilePath })},
	{path: "processManagement.timeZoneInfo", flags: []string{"timeZoneInfo"}, arg: "DIR", usage: "time zone database for aggregation's timezone arguments (default: the system's or Go's built-in one)", set: stringField(func(o *Options) *string { return &o.TimeZoneInfo })},

	{path: "cairn.metricsAddr", flags: []string{"metricsAddr"}, arg: "HOST:PORT", usage: "serve Prometheus metrics at http://HOST:PORT/metrics (off by default)", set: stringField(func(o *Options) *string { return &o.MetricsAddr })},
	{path: "cairn.documentIdUniquePrefix", flags: []string{"document-id-unique-prefix"}, arg: "N", usage: "0-65535: the prefix of this server's sequential document ids (persisted; give each server of a cluster its own); -1 (default) keeps the stored value", set: intField(func(o *Options) *int { return &o.IDPrefix }, -1, 65535)},
}

// SyncInterval reads the sync option: 0 for "always", else the interval.
func SyncInterval(s string) (time.Duration, error) {
	if s == "always" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("must be 'always' or a positive interval like 100ms, got %q", s)
	}
	return d, nil
}

func intField(field func(*Options) *int, lo, hi int) func(*Options, string) error {
	return func(o *Options, v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("must be an integer from %d to %d, got %q", lo, hi, v)
		}
		*field(o) = n
		return nil
	}
}

func boolField(field func(*Options) *bool) func(*Options, string) error {
	return func(o *Options, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("must be true or false, got %q", v)
		}
		*field(o) = b
		return nil
	}
}

func stringField(field func(*Options) *string) func(*Options, string) error {
	return func(o *Options, v string) error {
		*field(o) = v
		return nil
	}
}

func enumField(field func(*Options) *string, values ...string) func(*Options, string) error {
	return func(o *Options, v string) error {
		for _, ok := range values {
			if v == ok {
				*field(o) = v
				return nil
			}
		}
		return fmt.Errorf("must be %s, got %q", strings.Join(values, ", "), v)
	}
}

// byPath finds the option a file key sets.
func byPath(path string) (*option, bool) {
	for i := range options {
		if options[i].path == path {
			return &options[i], true
		}
	}
	return nil, false
}

// Validate checks what no single option can: combinations, and files that
// must exist.
func (o *Options) Validate() error {
	if o.BindIPAll && o.BindIP != DefaultBindIP {
		return fmt.Errorf("--bind_ip and --bind_ip_all (net.bindIp and net.bindIpAll) are mutually exclusive")
	}
	return o.TLS.Validate()
}

// Validate checks net.tls's combinations (mongod's and mongos's).
func (t TLS) Validate() error {
	switch t.Mode {
	case TLSDisabled, TLSAllow, TLSPrefer, TLSRequire:
	default:
		return fmt.Errorf("--tlsMode %q: want %s, %s, %s or %s", t.Mode, TLSDisabled, TLSAllow, TLSPrefer, TLSRequire)
	}
	if t.Mode != TLSDisabled && t.CertificateKeyFile == "" {
		return fmt.Errorf("--tlsMode %s needs --tlsCertificateKeyFile (net.tls.certificateKeyFile)", t.Mode)
	}
	if t.Mode == TLSDisabled && (t.CertificateKeyFile != "" || t.CAFile != "") {
		return fmt.Errorf("TLS certificate files are given but --tlsMode is disabled: set --tlsMode (net.tls.mode) to allowTLS, preferTLS or requireTLS")
	}
	return nil
}

// AuthEnabled reports whether clients must authenticate: --auth, or a
// key file (which implies it, as in mongod).
func (o *Options) AuthEnabled() bool { return o.Auth || o.KeyFile != "" }

// ListenIP is the addresses the server binds, comma-separated (for
// getCmdLineOpts and the exposure warning).
func (o *Options) ListenIP() string {
	if o.BindIPAll {
		return "0.0.0.0"
	}
	return o.BindIP
}

// ListenIPs are the addresses the server binds, one listener each.
func (o *Options) ListenIPs() []string { return strings.Split(o.ListenIP(), ",") }

// Flag is one command-line flag, for the command line to register.
type Flag struct {
	Name, Short string
	// Bool flags need no value; Count flags add one per occurrence.
	Bool, Count bool
	// Arg names the value; Usage explains the flag, with the config file
	// key that sets the same option.
	Arg, Usage string
	// AliasOf is the documented name when Name is another name for it.
	AliasOf string
	// Section is the config file section the option belongs to ("net",
	// "storage", ...), for grouping the help as mongod's.
	Section string
}

// flagOnlySections place the options that have no config file key of
// their own.
var flagOnlySections = map[string]string{"log-level": "systemLog", "auth": "security", "noauth": "security", "profile": "operationProfiling", "configsvr": "sharding"}

// Flags lists every flag, in the table's order.
func Flags() []Flag {
	var out []Flag
	for _, opt := range options {
		usage := opt.usage
		if opt.path != "" && len(opt.flags) > 0 {
			usage += " [" + opt.path + "]"
		}
		for i, name := range opt.flags {
			section, _, _ := strings.Cut(opt.path, ".")
			if section == "" {
				section = flagOnlySections[opt.flags[0]]
			}
			f := Flag{Name: name, Bool: opt.kind == kindBool, Count: opt.kind == kindCount, Arg: opt.arg, Usage: usage, Section: section}
			if i == 0 {
				f.Short = opt.short
			} else {
				f.AliasOf = opt.flags[0]
				f.Usage = "the same as --" + opt.flags[0]
			}
			out = append(out, f)
		}
	}
	return out
}
