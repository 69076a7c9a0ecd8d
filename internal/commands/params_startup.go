package commands

import (
	"fmt"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// enableTestCommandsParam is mongod's startup parameter that makes the test
// commands (configureFailPoint) exist.
const enableTestCommandsParam = "enableTestCommands"

// ApplyStartupParameters applies `--setParameter name=value` settings, as
// mongod does at startup. Values read as integers or booleans where they
// parse as one, else as strings; each is checked by the parameter's own
// rule. enableTestCommands may only be set here.
func (e *Env) ApplyStartupParameters(settings []string) error {
	for _, kv := range settings {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return fmt.Errorf("--setParameter takes name=value, got %q", kv)
		}
		e.startupParams = append(e.startupParams, [2]string{name, value})
		if name == enableTestCommandsParam {
			on, err := strconv.ParseBool(value)
			if err != nil {
				return fmt.Errorf("--setParameter %s must be 1, 0, true or false, got %q", name, value)
			}
			e.Params.Define(enableTestCommandsParam, on, nil)
			continue
		}
		if _, known := e.Params.Get(name); !known {
			return fmt.Errorf("unknown --setParameter %q", name)
		}
		if !e.Params.settable(name) {
			return fmt.Errorf("--setParameter %q cannot be changed", name)
		}
		if _, err := e.Params.Set(name, startupValue(value)); err != nil {
			return fmt.Errorf("--setParameter %s: %w", name, err)
		}
		e.applyParam(name)
	}
	return nil
}

// startupValue is a command-line parameter value as the BSON value
// setParameter would have received.
func startupValue(s string) bsoncore.Value {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, n)}
	}
	if b, err := strconv.ParseBool(s); err == nil {
		return bsoncore.Value{Type: bsoncore.TypeBoolean, Data: bsoncore.AppendBoolean(nil, b)}
	}
	return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, s)}
}

// settableAtStartup reports whether --setParameter may set name: the
// parameters setParameter may change, and enableTestCommands.
func (p *Params) settableAtStartup(name string) bool {
	return name == enableTestCommandsParam || p.settable(name)
}

// TestCommands reports whether the test commands are enabled.
func (e *Env) TestCommands() bool {
	v, _ := e.Params.Get(enableTestCommandsParam)
	on, _ := v.(bool)
	return on
}
