package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
	"gopkg.in/yaml.v3"
)

// Load builds the configuration: defaults, then the file at path (if not
// empty), then the environment. Every problem of both is reported, each
// naming the setting and what it accepts, with the SERVICE_* variables
// meant for agentauth that are not settings (see envcheck.go). Flags and
// validation come after (see Resolve).
func Load(path string, environ map[string]string) (Config, error) {
	cfg := Defaults()
	var errs []error
	if path != "" {
		errs = append(errs, decodeFile(path, &cfg)...)
	}
	errs = append(errs, parseVars(&cfg, environ, func(s Setting) string { return s.Env })...)
	errs = append(errs, checkEnvironment(environ)...)
	return cfg, errors.Join(errs...)
}

// Resolve is Load, then the flags (flag name without dashes → value, only
// those given), then the secrets of *_FILE settings, then Validate: every
// problem from every source together.
func Resolve(path string, environ, flags map[string]string) (Config, error) {
	cfg, err := Load(path, environ)
	errs := []error{err}
	vars := make(map[string]string, len(flags))
	for name, v := range flags {
		if s, ok := settingByFlag(name); ok && s.Env != "" {
			vars[s.Env] = v
		}
	}
	errs = append(errs, parseVars(&cfg, vars, func(s Setting) string { return flagName(s.Flag) })...)
	errs = append(errs, cfg.resolveSecretFiles()...)
	errs = append(errs, cfg.Validate())
	return cfg, errors.Join(errs...)
}

func settingByFlag(flag string) (Setting, bool) {
	for _, s := range Settings {
		if s.Flag != "" && s.Flag == flag {
			return s, true
		}
	}
	return Setting{}, false
}

// parseVars sets cfg from vars (environment variable → value) with
// caarlos0/env, which sets only the variables present, and turns its parse
// errors into one per setting, named by nameOf.
func parseVars(cfg *Config, vars map[string]string, nameOf func(Setting) string) []error {
	err := env.ParseWithOptions(cfg, env.Options{Environment: vars})
	if err == nil {
		return nil
	}
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return []error{err}
	}
	var out []error
	for _, e := range agg.Errors {
		var pe env.ParseError
		if !errors.As(e, &pe) {
			out = append(out, e)
			continue
		}
		names := envVarsOf(reflect.TypeOf(Config{}), pe.Name, vars)
		if len(names) == 0 {
			out = append(out, e)
			continue
		}
		for _, n := range names {
			s, _ := settingByEnv(n)
			hint := ""
			if nameOf(s) == n { // the variable, not a flag of the same setting
				hint = serviceLinkHint(n, vars[n])
			}
			out = append(out, fmt.Errorf("%s=%q is not valid: want %s (%s)%s", nameOf(s), vars[n], s.Accepts, s.Names(), hint))
		}
	}
	return out
}

// envVarsOf lists the given variables of the fields called name (caarlos0/env
// reports a field name, which two structs may share).
func envVarsOf(t reflect.Type, name string, vars map[string]string) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(time.Duration(0)) {
			out = append(out, envVarsOf(f.Type, name, vars)...)
			continue
		}
		if tag := f.Tag.Get("env"); f.Name == name && tag != "" {
			if _, set := vars[tag]; set {
				out = append(out, tag)
			}
		}
	}
	return out
}

// decodeFile reads the YAML file into cfg. A misspelt key is an error, not
// a silent default. yaml.v3 goes on after a bad value and reports them
// all, in Go's words (field prot not found in type config.Server); each is
// told again with the key, its line and what the setting accepts.
func decodeFile(path string, cfg *Config) []error {
	data, err := os.ReadFile(path)
	if err != nil {
		return []error{fmt.Errorf("config file %s (--config / SERVICE_CONFIG) cannot be read: %w", path, unwrapPathError(err))}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return []error{fmt.Errorf("config file %s is not valid YAML: %s", path, strings.TrimPrefix(err.Error(), "yaml: "))}
	}
	if root.Kind == 0 {
		return nil // an empty file sets nothing
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err = dec.Decode(cfg)
	if err == nil {
		return nil
	}
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return []error{fmt.Errorf("config file %s: %s", path, strings.TrimPrefix(err.Error(), "yaml: "))}
	}
	lines := map[int]string{}
	keyLines(&root, "", lines)
	out := make([]error, 0, len(te.Errors))
	for _, msg := range te.Errors {
		out = append(out, explainFileError(path, msg, lines))
	}
	return out
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

var (
	unknownField = regexp.MustCompile(`^line (\d+): field (\S+) not found in type \S+$`)
	wrongType    = regexp.MustCompile("^line (\\d+): cannot unmarshal !!\\w+ `(.*)` into (.+)$")
)

// explainFileError rewrites one yaml.v3 decoding error.
func explainFileError(path, msg string, lines map[int]string) error {
	if m := unknownField.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		key := lines[line]
		if key == "" {
			key = m[2]
		}
		parent := key[:max(0, strings.LastIndex(key, "."))]
		return fmt.Errorf("config file %s, line %d: %s is not a setting; the keys %s are: %s",
			path, line, key, where(parent), strings.Join(knownKeys(parent), ", "))
	}
	if m := wrongType.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		key := lines[line]
		want := goTypeInWords(m[3])
		if s, ok := settingByKey(key); ok {
			want = s.Accepts
		}
		return fmt.Errorf("config file %s, line %d: %s: %q is not valid: want %s", path, line, key, m[2], want)
	}
	return fmt.Errorf("config file %s: %s", path, msg)
}

func where(parent string) string {
	if parent == "" {
		return "at the top level"
	}
	return "under " + parent
}

// listItemKeys are the keys of the items of list settings.
var listItemKeys = map[string][]string{
	"auth.roles": {"name", "extends", "permissions"},
	"auth.keys":  {"subject", "role", "keyFile"},
}

// knownKeys lists the keys directly under parent ("" for the top level;
// auth.roles[0] for an item of a list setting).
func knownKeys(parent string) []string {
	if i := strings.LastIndex(parent, "["); i > 0 && strings.HasSuffix(parent, "]") {
		return listItemKeys[parent[:i]]
	}
	var out []string
	prefix := parent + "."
	if parent == "" {
		prefix = ""
	}
	for _, s := range Settings {
		if s.Key == "" || !strings.HasPrefix(s.Key, prefix) {
			continue
		}
		next, _, _ := strings.Cut(strings.TrimPrefix(s.Key, prefix), ".")
		if !slices.Contains(out, next) {
			out = append(out, next)
		}
	}
	return out
}

// keyLines records, for each line of the file, the dotted path of the
// deepest key or list item on it (auth.roles[1].name).
func keyLines(n *yaml.Node, path string, out map[int]string) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			keyLines(c, path, out)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			out[k.Line] = p
			keyLines(v, p, out)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			if _, seen := out[c.Line]; !seen || c.Kind != yaml.ScalarNode {
				out[c.Line] = p
			}
			keyLines(c, p, out)
		}
	}
}

// goTypeInWords says what a Go type takes, for values outside the table
// (inside list items).
func goTypeInWords(t string) string {
	switch {
	case t == "time.Duration":
		return "a duration with a unit, such as 30s"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "int"):
		return "a whole number"
	case t == "string":
		return "a text value"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map"):
		return "a mapping of keys to values"
	}
	return "a value of another kind"
}
