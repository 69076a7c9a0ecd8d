package commands

import (
	"context"
	"os"
	"runtime"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// This file holds the diagnostic commands drivers and tools send at connect
// time or for monitoring: buildInfo, hostInfo, serverStatus, getCmdLineOpts,
// connectionStatus, whatsmyuri, getLog.

func cmdBuildInfo(_ context.Context, s *Session, _ *Request, dst []byte) (bsoncore.Document, error) {
	r := NewReply(dst)
	r.String("version", MongoVersion)
	r.String("gitVersion", "cairn")
	r.Any("versionArray", MongoVersionArray)
	r.Int32("bits", 64)
	r.Bool("debug", false)
	r.Int32("maxBsonObjectSize", MaxBSONObjectSize)
	r.Any("storageEngines", []string{"pebble"})
	r.String("javascriptEngine", "none")
	r.String("sysInfo", "deprecated")
	r.Any("modules", []string{})
	r.Doc("buildEnvironment", doc("distarch", runtime.GOARCH, "target_arch", runtime.GOARCH, "target_os", runtime.GOOS, "go", runtime.Version()))
	r.Doc("openssl", doc("running", "disabled"))
	r.String("cairnVersion", s.Env.Config.CairnVer)
	return r.Finish(), nil
}

func cmdHostInfo(_ context.Context, _ *Session, _ *Request, dst []byte) (bsoncore.Document, error) {
	host, _ := os.Hostname()
	r := NewReply(dst)
	r.Doc("system", doc(
		"currentTime", bson.DateTime(time.Now().UnixMilli()),
		"hostname", host,
		"cpuAddrSize", int32(64),
		"memSizeMB", memSizeMB(),
		"numCores", int32(runtime.NumCPU()),
		"cpuArch", runtime.GOARCH,
		"numaEnabled", false,
	))
	r.Doc("os", doc("type", osType(), "name", osName(), "version", kernelVersion()))
	r.Doc("extra", doc())
	return r.Finish(), nil
}

func osType() string {
	if runtime.GOOS == "linux" {
		return "Linux"
	}
	return runtime.GOOS
}

func osName() string {
	b, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return runtime.GOOS
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return runtime.GOOS
}

func kernelVersion() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func memSizeMB() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			var kb int64
			for _, f := range strings.Fields(v) {
				for _, c := range f {
					if c < '0' || c > '9' {
						break
					}
					kb = kb*10 + int64(c-'0')
				}
				break
			}
			return kb / 1024
		}
	}
	return 0
}

func cmdServerStatus(_ context.Context, s *Session, _ *Request, dst []byte) (bsoncore.Document, error) {
	host, _ := os.Hostname()
	env := s.Env
	up := time.Since(env.Started)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r := NewReply(dst)
	r.String("host", host)
	r.String("version", MongoVersion)
	r.String("process", "cairn")
	r.Int64("pid", int64(os.Getpid()))
	r.Double("uptime", float64(int64(up.Seconds())))
	r.Int64("uptimeMillis", up.Milliseconds())
	r.Int64("uptimeEstimate", int64(up.Seconds()))
	r.Any("localTime", bson.DateTime(time.Now().UnixMilli()))
	r.Doc("connections", doc(
		"current", int32(env.Connections.Current.Load()),
		"available", int32(env.Connections.Available.Load()),
		"totalCreated", env.Connections.TotalCreated.Load(),
		"active", int32(env.Connections.Current.Load()),
	))
	o := &env.Ops
	r.Doc("opcounters", doc(
		"insert", o.Insert.Load(), "query", o.Query.Load(), "update", o.Update.Load(),
		"delete", o.Delete.Load(), "getmore", o.GetMore.Load(), "command", o.Command.Load(),
	))
	r.Doc("asserts", doc("regular", int32(0), "warning", int32(0), "msg", int32(0), "user", int32(o.UserErrors.Load()), "tripwire", int32(0), "rollovers", int32(0)))
	n := &env.Network
	r.Doc("network", doc("bytesIn", n.BytesIn.Load(), "bytesOut", n.BytesOut.Load(), "numRequests", n.NumRequests.Load()))
	r.Doc("mem", doc("bits", int32(64), "resident", int32(ms.Sys>>20), "virtual", int32(ms.Sys>>20), "supported", true))
	r.Doc("metrics", doc(
		"cursor", doc("open", doc("total", int64(env.Cursors.Len()))),
		"ttl", doc("deletedDocuments", env.TTL.Deleted(), "passes", env.TTL.Passes()),
	))
	r.Doc("storageEngine", doc("name", "pebble", "supportsCommittedReads", true, "persistent", true))
	// The block cache under WiredTiger's field names, which monitoring
	// tools read (mongostat's used%).
	cs := env.Engine.Storage().CacheStats()
	r.Doc("wiredTiger", doc("cache", doc(
		"maximum bytes configured", cs.Capacity,
		"bytes currently in the cache", cs.Size,
		"pages requested from the cache", cs.Hits+cs.Misses,
		"pages read into cache", cs.Misses,
	)))
	return r.Finish(), nil
}

func cmdGetCmdLineOpts(_ context.Context, s *Session, _ *Request, dst []byte) (bsoncore.Document, error) {
	cfg := s.Env.Config
	r := NewReply(dst)
	r.Any("argv", cfg.Argv)
	parsed := NewReply(nil)
	parsed.Doc("net", doc("bindIp", cfg.BindIP, "port", int32(cfg.Port)))
	if len(s.Env.startupParams) > 0 {
		// As mongod: values as given on the command line, as strings
		// (harnesses look for setParameter.enableTestCommands here).
		sp := NewReply(nil)
		for _, kv := range s.Env.startupParams {
			sp.String(kv[0], kv[1])
		}
		parsed.Doc("setParameter", sp.End())
	}
	parsed.Doc("storage", doc("dbPath", cfg.DBPath))
	r.Doc("parsed", parsed.End())
	return r.Finish(), nil
}

func cmdConnectionStatus(_ context.Context, _ *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	r := NewReply(dst)
	info := doc("authenticatedUsers", bson.A{}, "authenticatedUserRoles", bson.A{})
	if show, _ := req.Bool("showPrivileges", false); show {
		info = doc("authenticatedUsers", bson.A{}, "authenticatedUserRoles", bson.A{}, "authenticatedUserPrivileges", bson.A{})
	}
	r.Doc("authInfo", info)
	return r.Finish(), nil
}

func cmdWhatsMyURI(_ context.Context, s *Session, _ *Request, dst []byte) (bsoncore.Document, error) {
	return NewReply(dst).String("you", s.Remote).Finish(), nil
}

// cmdGetLog serves getLog: "*" lists the logs, "global" returns recent lines,
// "startupWarnings" has none (Cairn starts without warnings to give).
func cmdGetLog(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	which, ok := req.First().StringValueOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "Argument to getLog must be of type String; found %s of type %s", req.First(), typeName(req.First().Type))
	}
	r := NewReply(dst)
	switch which {
	case "*":
		r.StringArray("names", []string{"global", "startupWarnings"})
	case "startupWarnings":
		r.Count("totalLinesWritten", 0)
		r.StringArray("log", []string{})
	case "global":
		var lines []string
		var total int64
		if s.Env.Logs != nil {
			lines, total = s.Env.Logs.Lines()
		}
		r.Count("totalLinesWritten", total)
		r.StringArray("log", lines)
	default:
		return nil, mongoerr.New(mongoerr.OperationFailed, "No log named '%s'", which)
	}
	return r.Finish(), nil
}

func cmdGetParameter(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	params := s.Env.Params
	all := false
	details := false
	switch first := req.First(); first.Type {
	case bsoncore.TypeString:
		all = first.StringValue() == "*"
	case bsoncore.TypeEmbeddedDocument:
		opts := first.Document()
		if v, err := opts.LookupErr("allParameters"); err == nil {
			all, _ = v.BooleanOK()
		}
		if v, err := opts.LookupErr("showDetails"); err == nil {
			details, _ = v.BooleanOK()
		}
	}
	var names []string
	if all {
		names = params.Names()
	} else {
		elems, _ := req.Body.Elements()
		for _, el := range elems[1:] {
			if k := el.Key(); !isGeneric(k) {
				names = append(names, k)
			}
		}
	}
	r := NewReply(dst)
	found := 0
	for _, n := range names {
		v, ok := params.Get(n)
		if !ok {
			continue
		}
		found++
		if details {
			r.Doc(n, doc("value", v, "settableAtRuntime", params.settable(n), "settableAtStartup", params.settableAtStartup(n)))
		} else {
			r.Any(n, v)
		}
	}
	if found == 0 && !all {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "no option found to get")
	}
	return r.Finish(), nil
}

func cmdSetParameter(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	elems, _ := req.Body.Elements()
	var name string
	var val bsoncore.Value
	for _, el := range elems[1:] {
		if k := el.Key(); !isGeneric(k) {
			if name != "" {
				return nil, mongoerr.New(mongoerr.BadValue, "setParameter takes one parameter at a time")
			}
			name, val = k, el.Value()
		}
	}
	if name == "" {
		return nil, mongoerr.New(mongoerr.NoSuchKey, "no option found to set, use help:true to see options ")
	}
	old, err := s.Env.Params.Set(name, val)
	if err != nil {
		return nil, err
	}
	s.Env.applyParam(name)
	return NewReply(dst).Any("was", old).Finish(), nil
}

// applyParam passes a changed parameter on to the state that caches it.
func (e *Env) applyParam(name string) {
	if name == "cursorTimeoutMillis" {
		ms, _ := e.Params.Get(name)
		e.Cursors.SetTimeout(time.Duration(ms.(int64)) * time.Millisecond)
	}
}
