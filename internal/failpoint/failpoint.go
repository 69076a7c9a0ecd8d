package failpoint

import (
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
)

// Mode is how a point decides to fire.
type Mode uint8

// The modes of MongoDB's fail points.
const (
	Off Mode = iota
	AlwaysOn
	Times       // fire on the next N matching evaluations, then turn off
	Skip        // let the next N matching evaluations pass, then always fire
	Probability // fire on each matching evaluation with probability P
)

// Config is a point's setting.
type Config struct {
	Mode Mode
	// N counts evaluations for Times and Skip.
	N int64
	// P is the activation probability, in [0, 1], for Probability.
	P float64
	// Data is the BSON document configuring what the point does when it
	// fires; the package does not read it.
	Data []byte
}

// StorageFailBeforeCommit is the storage commit pipeline's point: when it
// fires, a commit group is not committed and every request in it fails.
const StorageFailBeforeCommit = "storageFailBeforeCommit"

// StorageFailAfterCommit is the storage commit pipeline's point after a
// group is durable: when it fires, every request of the group gets an
// error although its writes committed, the outcome a client sees when a
// connection drops after the sync (the case retryable writes exist for).
const StorageFailAfterCommit = "storageFailAfterCommit"

// Point is one named fail point. A nil *Point is always off.
type Point struct {
	name    string
	active  atomic.Bool // "Off is one load"
	entered atomic.Int64

	mu        sync.Mutex
	cfg       Config
	remaining int64
	rng       *rand.Rand
}

// Name is the point's name.
func (p *Point) Name() string { return p.name }

// Active reports whether the point may fire: false for a nil or off point,
// with one atomic load.
func (p *Point) Active() bool { return p != nil && p.active.Load() }

// Eval decides whether the point fires now. match, when not nil, filters on
// the data first ("Match before count"). It returns the data when it fires.
func (p *Point) Eval(match func(data []byte) bool) ([]byte, bool) {
	if !p.Active() {
		return nil, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cfg.Mode == Off {
		return nil, false
	}
	data := p.cfg.Data
	if match != nil && !match(data) {
		return nil, false
	}
	switch p.cfg.Mode {
	case Times:
		p.remaining--
		if p.remaining <= 0 {
			p.cfg.Mode = Off
			p.active.Store(false)
		}
	case Skip:
		if p.remaining > 0 {
			p.remaining--
			return nil, false
		}
	case Probability:
		if p.rng.Float64() >= p.cfg.P {
			return nil, false
		}
	}
	p.entered.Add(1)
	return data, true
}

// Set changes the point's mode and data and returns how many times it has
// fired so far (configureFailPoint's count). {Times: 0} is off.
func (p *Point) Set(cfg Config) (entered int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cfg.Mode == Times && cfg.N <= 0 {
		cfg.Mode = Off
	}
	p.cfg = cfg
	p.remaining = cfg.N
	p.active.Store(cfg.Mode != Off)
	return p.entered.Load()
}

// Config returns the point's current setting (Times and Skip with what is
// left of N).
func (p *Point) Config() Config {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.cfg
	c.N = p.remaining
	return c
}

// Entered is how many times the point has fired.
func (p *Point) Entered() int64 { return p.entered.Load() }

// Registry holds the named points of one server.
type Registry struct {
	mu     sync.Mutex
	points map[string]*Point
	seed   uint64
}

// NewRegistry returns an empty registry. Points of mode Probability draw
// from a generator seeded with seed (tests print it).
func NewRegistry(seed uint64) *Registry {
	return &Registry{points: map[string]*Point{}, seed: seed}
}

// Define returns the point named name, creating it (off) the first time.
// A nil registry returns a nil point, which never fires.
func (r *Registry) Define(name string) *Point {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.points[name]; ok {
		return p
	}
	p := &Point{name: name, rng: rand.New(rand.NewPCG(r.seed, uint64(len(r.points))))}
	r.points[name] = p
	return p
}

// Lookup returns the point named name, if defined.
func (r *Registry) Lookup(name string) (*Point, bool) {
	if r == nil {
		return nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.points[name]
	return p, ok
}

// Names lists the defined points, sorted.
func (r *Registry) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.points))
	for n := range r.points {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
