package idgen

import (
	"encoding/hex"
	"fmt"
	"math"
	"sync"
)

// Limits of the sequential id parameters.
const (
	MaxPrefix    = 65535
	MaxIncrement = 65535 // as MySQL's auto_increment_increment
)

// Config are the sequential generator's parameters.
type Config struct {
	Prefix    uint16 // documentIdUniquePrefix
	Offset    uint64 // autoIncrementOffset, ≥ 1
	Increment uint64 // autoIncrementIncrement, ≥ 1
}

// Validate checks the parameter ranges.
func (c Config) Validate() error {
	if c.Offset < 1 || c.Offset > MaxIncrement {
		return fmt.Errorf("autoIncrementOffset must be between 1 and %d, got %d", MaxIncrement, c.Offset)
	}
	if c.Increment < 1 || c.Increment > MaxIncrement {
		return fmt.Errorf("autoIncrementIncrement must be between 1 and %d, got %d", MaxIncrement, c.Increment)
	}
	return nil
}

// Sequential issues sequential ids. It is safe for concurrent use.
type Sequential struct {
	mu     sync.Mutex
	cfg    Config
	ts     uint32
	serial uint64
	// persistTS durably records a start timestamp before ids carrying it
	// are issued ("Strictly increasing").
	persistTS func(uint32) error
}

// StartTimestamp is the start timestamp a new run takes: the current time in
// seconds, or one past the last persisted one if the clock went backwards or
// the last run advanced past now.
func StartTimestamp(nowSeconds int64, lastPersisted uint32) uint32 {
	ts := uint32(max(nowSeconds, 0))
	if ts <= lastPersisted {
		ts = lastPersisted + 1
	}
	return ts
}

// NewSequential returns a generator starting at timestamp ts (already
// persisted by the caller). persistTS records a later timestamp when the
// serial overflows.
func NewSequential(cfg Config, ts uint32, persistTS func(uint32) error) (*Sequential, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Sequential{cfg: cfg, ts: ts, persistTS: persistTS}, nil
}

// SetConfig changes the parameters for ids issued from now on. A new offset
// or increment restarts the serial on a fresh timestamp, so ids stay
// increasing and never repeat.
func (s *Sequential) SetConfig(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if (cfg.Offset != s.cfg.Offset || cfg.Increment != s.cfg.Increment) && s.serial != 0 {
		if err := s.advanceTimestamp(); err != nil {
			return err
		}
	}
	s.cfg = cfg
	return nil
}

// Config returns the current parameters.
func (s *Sequential) Config() Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

// Next returns the next id as its 28 hex characters.
func (s *Sequential) Next() (string, error) {
	var buf [28]byte
	b, err := s.AppendNext(buf[:0])
	return string(b), err
}

// AppendNext appends the next id's 28 hex characters to dst.
func (s *Sequential) AppendNext(dst []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.serial == 0:
		s.serial = s.cfg.Offset
	case s.serial > math.MaxUint64-s.cfg.Increment:
		if err := s.advanceTimestamp(); err != nil {
			return dst, err
		}
		s.serial = s.cfg.Offset
	default:
		s.serial += s.cfg.Increment
	}
	var raw [14]byte
	raw[0], raw[1] = byte(s.cfg.Prefix>>8), byte(s.cfg.Prefix)
	raw[2], raw[3], raw[4], raw[5] = byte(s.ts>>24), byte(s.ts>>16), byte(s.ts>>8), byte(s.ts)
	for i := range 8 {
		raw[6+i] = byte(s.serial >> (56 - 8*i))
	}
	return hex.AppendEncode(dst, raw[:]), nil
}

// advanceTimestamp moves to the next start timestamp, persisted first.
func (s *Sequential) advanceTimestamp() error {
	next := s.ts + 1
	if s.persistTS != nil {
		if err := s.persistTS(next); err != nil {
			return fmt.Errorf("idgen: persisting the start timestamp: %w", err)
		}
	}
	s.ts = next
	s.serial = 0
	return nil
}

// Restart continues on start timestamp ts (already persisted by the
// caller, above every timestamp issued before), serial from the offset: a
// replica set member that becomes primary restarts on a timestamp above
// the one its predecessor persisted, so its ids rise above the ones the
// set committed.
func (s *Sequential) Restart(ts uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ts, s.serial = ts, 0
}
