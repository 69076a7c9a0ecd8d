package commands

import (
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/ttl"
)

// param is one server parameter.
type param struct {
	value any
	// get, when set, reads the live value from its owner (the engine keeps
	// persisted parameters); value is then unused.
	get func() any
	// set validates and applies a new value and returns what to remember;
	// nil means read-only at runtime.
	set func(v bsoncore.Value) (any, error)
}

// Params are the server parameters getParameter and setParameter read and
// change. Later issues add their own (documentIdUniquePrefix, …) with Define.
type Params struct {
	mu     sync.RWMutex
	values map[string]*param
	// requireAPIVersion is requireApiVersion, read by every command
	// (checkAPI) without taking mu.
	requireAPIVersion atomic.Bool
}

// NewParams returns the parameters every Cairn node has.
func NewParams() *Params {
	p := &Params{values: map[string]*param{}}
	p.Define("featureCompatibilityVersion", bson.D{{Key: "version", Value: fcvVersion}}, nil) // cmd_setfcv.go
	p.Define("cursorTimeoutMillis", int64(DefaultCursorTimeout.Milliseconds()), nonNegativeInt)
	p.Define("ttlMonitorSleepSecs", int32(60), positiveInt)
	p.Define(preImageRemovalSleepParam, int32(10), positiveInt) // cmd_clusterparameter.go
	p.Define("logLevel", int32(0), nonNegativeInt)
	p.Define("notablescan", false, boolParam)
	p.Define("internalQueryMaxBlockingSortMemoryUsageBytes", int64(100*1024*1024), positiveInt)
	p.Define("maxBSONDepth", int32(200), nil)
	p.Define(enableTestCommandsParam, false, nil) // startup only (params_startup.go)
	// Read-only and truthful: Cairn logs the same either way, and until the
	// security issue it authenticates no one, with no mechanism.
	p.Define("quiet", false, nil)
	p.Define("authenticationMechanisms", []string{}, nil)
	// requireApiVersion: commands without apiVersion fail (checkAPI).
	p.DefineLive("requireApiVersion", func() any { return p.requireAPIVersion.Load() }, func(v bsoncore.Value) (any, error) {
		b, err := boolParam(v)
		if err == nil {
			p.requireAPIVersion.Store(b.(bool))
		}
		return b, err
	})
	return p
}

// Define adds a parameter with its initial value; set is nil for read-only.
func (p *Params) Define(name string, value any, set func(bsoncore.Value) (any, error)) {
	p.mu.Lock()
	p.values[name] = &param{value: value, set: set}
	p.mu.Unlock()
}

// DefineLive adds a parameter whose value lives elsewhere: get reads it and
// set validates and stores it (persisting it, for the engine's parameters).
func (p *Params) DefineLive(name string, get func() any, set func(bsoncore.Value) (any, error)) {
	p.mu.Lock()
	p.values[name] = &param{get: get, set: set}
	p.mu.Unlock()
}

// Get returns a parameter's value.
func (p *Params) Get(name string) (any, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	v, ok := p.values[name]
	if !ok {
		return nil, false
	}
	if v.get != nil {
		return v.get(), true
	}
	return v.value, true
}

// Set validates and changes a parameter, returning the old value.
func (p *Params) Set(name string, v bsoncore.Value) (old any, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	prm, ok := p.values[name]
	if !ok {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "attempted to set unrecognized parameter [%s], use help:true to see options ", name)
	}
	if prm.set == nil {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "not allowed to change [%s] at runtime", name)
	}
	old = prm.value
	if prm.get != nil {
		old = prm.get()
	}
	nv, err := prm.set(v)
	if err != nil {
		return nil, err
	}
	prm.value = nv
	return old, nil
}

// Names lists every parameter, sorted.
func (p *Params) Names() []string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	names := make([]string, 0, len(p.values))
	for n := range p.values {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (p *Params) settable(name string) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	v, ok := p.values[name]
	return ok && v.set != nil
}

func nonNegativeInt(v bsoncore.Value) (any, error) {
	n, ok := numberAsInt(v)
	if !ok || n < 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "parameter must be a non-negative integer, got %s", v)
	}
	return n, nil
}

func positiveInt(v bsoncore.Value) (any, error) {
	n, ok := numberAsInt(v)
	if !ok || n <= 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "parameter must be a positive integer, got %s", v)
	}
	return n, nil
}

func boolParam(v bsoncore.Value) (any, error) {
	if b, ok := v.BooleanOK(); ok {
		return b, nil
	}
	if n, ok := numberAsInt(v); ok {
		return n != 0, nil
	}
	return nil, mongoerr.New(mongoerr.BadValue, "parameter must be a boolean, got %s", v)
}

// startTTLMonitor starts the TTL monitor with its period read from
// ttlMonitorSleepSecs before every sleep, so setParameter changes it at
// runtime.
func startTTLMonitor(eng *engine.Engine, p *Params, log *slog.Logger, active func() bool) *ttl.Monitor {
	return ttl.Start(eng, ttl.Options{Logger: log, Active: active, Period: ttlPeriod(p)})
}

// ttlPeriod reads ttlMonitorSleepSecs, the period of the TTL monitor and
// of the versioned collections' retention monitor.
func ttlPeriod(p *Params) func() time.Duration {
	return func() time.Duration {
		v, _ := p.Get("ttlMonitorSleepSecs")
		switch n := v.(type) {
		case int32:
			return time.Duration(n) * time.Second
		case int64:
			return time.Duration(n) * time.Second
		}
		return ttl.DefaultPeriod
	}
}
