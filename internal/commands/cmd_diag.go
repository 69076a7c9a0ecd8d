package commands

import (
	"context"
	"os"
	"runtime"
	"strconv"
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

// cmdGetCmdLineOpts answers the command line and, in parsed, the options in
// mongod's config file shape: those given (Config.Given: the config file's
// keys and the flags), with net.port, net.bindIp, storage.dbPath and
// security.authorization always shown at their effective values.
func cmdGetCmdLineOpts(_ context.Context, s *Session, _ *Request, dst []byte) (bsoncore.Document, error) {
	cfg := s.Env.Config
	r := NewReply(dst)
	r.Any("argv", cfg.Argv)
	var entries []pathValue
	effective := map[string]bool{"net.port": true, "net.bindIp": true, "storage.dbPath": true, "security.authorization": true}
	for _, g := range cfg.Given {
		if !effective[g[0]] && !strings.HasPrefix(g[0], "setParameter.") {
			entries = append(entries, pathValue{g[0], optionValue(g[1])})
		}
	}
	entries = append(entries, pathValue{"net.bindIp", stringValue(cfg.BindIP)}, pathValue{"net.port", int32Value(int32(cfg.Port))})
	// As mongod: --setParameter values as given, as strings (harnesses
	// look for setParameter.enableTestCommands here).
	for _, kv := range s.Env.startupParams {
		entries = append(entries, pathValue{"setParameter." + kv[0], stringValue(kv[1])})
	}
	if cfg.Auth {
		entries = append(entries, pathValue{"security.authorization", stringValue("enabled")})
	}
	entries = append(entries, pathValue{"storage.dbPath", stringValue(cfg.DBPath)})
	r.Doc("parsed", nestedDoc(entries))
	return r.Finish(), nil
}

// pathValue is one option of getCmdLineOpts's parsed: its dotted path
// ("net.tls.mode") and value.
type pathValue struct {
	path  string
	value bsoncore.Value
}

// nestedDoc writes dotted paths as nested documents, each level's keys in
// the order first seen; a later value for a path replaces an earlier one.
func nestedDoc(entries []pathValue) bsoncore.Document {
	var order []string
	leaves := map[string]bsoncore.Value{}
	groups := map[string][]pathValue{}
	for _, e := range entries {
		head, rest, nested := strings.Cut(e.path, ".")
		_, isLeaf := leaves[head]
		_, isGroup := groups[head]
		if !isLeaf && !isGroup {
			order = append(order, head)
		}
		if nested {
			delete(leaves, head)
			groups[head] = append(groups[head], pathValue{rest, e.value})
		} else {
			delete(groups, head)
			leaves[head] = e.value
		}
	}
	r := NewReply(nil)
	for _, k := range order {
		if v, ok := leaves[k]; ok {
			r.Value(k, v)
		} else if g, ok := groups[k]; ok {
			r.Doc(k, nestedDoc(g))
		}
	}
	return r.End()
}

// optionValue is an option's value as given, typed as mongod's parsed shows
// it: a whole number as an int, true or false as a bool, a decimal number
// as a double, anything else as a string.
func optionValue(s string) bsoncore.Value {
	if n, err := strconv.ParseInt(s, 10, 32); err == nil {
		return int32Value(int32(n))
	}
	if b, err := strconv.ParseBool(s); err == nil && (s == "true" || s == "false") {
		return bsoncore.Value{Type: bsoncore.TypeBoolean, Data: bsoncore.AppendBoolean(nil, b)}
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, f)}
	}
	return stringValue(s)
}

func stringValue(s string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, s)}
}

func int32Value(n int32) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, n)}
}

func cmdWhatsMyURI(_ context.Context, s *Session, _ *Request, dst []byte) (bsoncore.Document, error) {
	return NewReply(dst).String("you", s.Remote).Finish(), nil
}

// cmdGetLog serves getLog: "*" lists the logs, "global" returns recent lines,
// "startupWarnings" the warnings of startup (an exposed server without
// access control).
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
		r.Count("totalLinesWritten", int64(len(s.Env.startupWarnings)))
		r.StringArray("log", append([]string{}, s.Env.startupWarnings...))
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
