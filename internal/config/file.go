package config

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Setting is one flag as given on the command line, by its name.
type Setting struct {
	Flag, Value string
}

// Load builds the effective options: Defaults, then the config file (when
// file is not ""), then the flags in the order given (invariant "Flags win"),
// then Validate.
func Load(file string, flags []Setting) (Options, error) {
	o := Defaults()
	if file != "" {
		text, err := os.ReadFile(file)
		if err != nil {
			return o, fmt.Errorf("cannot read the config file: %w", err)
		}
		o.give("config", file)
		if err := ParseFile(text, &o); err != nil {
			return o, fmt.Errorf("config file %s: %w", file, err)
		}
		o.ConfigFile = file
	}
	for _, s := range flags {
		if err := SetFlag(&o, s.Flag, s.Value); err != nil {
			return o, err
		}
	}
	if o.ClusterRole == "configsvr" && !o.gave("net.port") {
		o.Port = ConfigSvrPort // mongod --configsvr's default port
	}
	return o, o.Validate()
}

// ConfigSvrPort is a config server's port when none is given, as mongod's.
const ConfigSvrPort = 27019

// gave reports whether the file or a flag set the option at path.
func (o *Options) gave(path string) bool {
	for _, g := range o.Given {
		if g[0] == path {
			return true
		}
	}
	return false
}

// SetFlag applies one flag to o.
func SetFlag(o *Options, name, value string) error {
	opt := byFlag(name)
	if opt == nil {
		return fmt.Errorf("unknown flag --%s", name)
	}
	if err := opt.set(o, value); err != nil {
		return fmt.Errorf("--%s %w", name, err)
	}
	switch {
	case opt.kind == kindCount:
		o.give(opt.path, strconv.Itoa(o.Verbosity))
	case name == "auth" || name == "noauth":
		o.give("security.authorization", map[bool]string{true: "enabled", false: "disabled"}[o.Auth])
	case name == "profile":
		o.give("operationProfiling.mode", []string{"off", "slowOp", "all"}[o.Profile])
	case opt.path != "" && opt.path != "setParameter":
		o.give(opt.path, value)
	}
	return nil
}

func byFlag(name string) *option {
	for i := range options {
		for _, f := range options[i].flags {
			if f == name {
				return &options[i]
			}
		}
	}
	return nil
}

// ParseFile applies mongod's YAML config file text to o. Every key must be
// one the table has (invariant "Accepted means honoured"); an error names
// the key's path.
func ParseFile(text []byte, o *Options) error {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(text))
	if err := dec.Decode(&doc); err != nil {
		if err.Error() == "EOF" {
			return nil // an empty file sets nothing
		}
		return fmt.Errorf("not valid YAML: %w", err)
	}
	if len(doc.Content) == 0 {
		return nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: the file must be a mapping of sections (net:, storage:, ...)", root.Line)
	}
	return walk(root, "", o)
}

// walk applies the keys of mapping node m, whose path is prefix.
func walk(m *yaml.Node, prefix string, o *Options) error {
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: a key must be a plain name", k.Line)
		}
		path := k.Value
		if prefix != "" {
			path = prefix + "." + k.Value
		}
		if seen[k.Value] {
			return fmt.Errorf("line %d: %s is given twice", k.Line, path)
		}
		seen[k.Value] = true
		if v.Kind == yaml.AliasNode || k.Kind == yaml.AliasNode {
			return fmt.Errorf("line %d: %s: YAML aliases are not supported", k.Line, path)
		}
		if path == "setParameter" {
			if err := setParameters(v, o); err != nil {
				return err
			}
			continue
		}
		switch v.Kind {
		case yaml.MappingNode:
			if _, ok := byPath(path); ok {
				return fmt.Errorf("line %d: %s takes a value, not a section", v.Line, path)
			}
			if err := unsupported(path); err != nil && !optionUnder(path) {
				return fmt.Errorf("line %d: %w", k.Line, err)
			}
			if !isSection(path) {
				return fmt.Errorf("line %d: %w", k.Line, unknownKey(path))
			}
			if err := walk(v, path, o); err != nil {
				return err
			}
		case yaml.ScalarNode:
			opt, ok := byPath(path)
			if !ok {
				if err := unsupported(path); err != nil {
					return fmt.Errorf("line %d: %w", k.Line, err)
				}
				if isSection(path) {
					if v.Tag == "!!null" {
						continue // "storage:" with nothing under it
					}
					return fmt.Errorf("line %d: %s is a section (of options such as %s), not a value", k.Line, path, firstUnder(path))
				}
				return fmt.Errorf("line %d: %w", k.Line, unknownKey(path))
			}
			if v.Tag == "!!null" {
				return fmt.Errorf("line %d: %s has no value", k.Line, path)
			}
			if err := opt.set(o, v.Value); err != nil {
				return fmt.Errorf("line %d: %s %w", v.Line, path, err)
			}
			o.give(path, v.Value)
		default:
			return fmt.Errorf("line %d: %s takes a single value, not a list", v.Line, path)
		}
	}
	return nil
}

// setParameters applies the setParameter section: name: value pairs.
func setParameters(m *yaml.Node, o *Options) error {
	if m.Kind == yaml.ScalarNode && m.Tag == "!!null" {
		return nil
	}
	if m.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: setParameter must be a mapping of parameter names to values", m.Line)
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if v.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: setParameter.%s must be a single value", v.Line, k.Value)
		}
		o.SetParameters = append(o.SetParameters, k.Value+"="+v.Value)
	}
	return nil
}

// firstUnder is the first option path in section path.
func firstUnder(path string) string {
	for _, opt := range options {
		if strings.HasPrefix(opt.path, path+".") {
			return opt.path
		}
	}
	return ""
}

// isSection reports whether path is a prefix of some option's path.
func isSection(path string) bool {
	for _, opt := range options {
		if strings.HasPrefix(opt.path, path+".") {
			return true
		}
	}
	return false
}
