package config

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// goWords are what Go's parsers say; a configuration message never shows
// them.
var goWords = []string{"strconv", "invalid syntax", "not found in type", "config.", "!!", "unmarshal", "time.Duration", "parse error on field"}

// TestResolveReportsEveryProblemInPlainWords: problems of the file, the
// environment, the flags and validation come together, each naming the
// setting and what it accepts.
func TestResolveReportsEveryProblemInPlainWords(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		env   map[string]string
		flags map[string]string
		wants []string
	}{
		{"port abc does not hide the log level", "", map[string]string{"SERVICE_PORT": "abc", "SERVICE_LOG_LEVEL": "verbose"}, nil,
			[]string{`SERVICE_PORT="abc" is not valid: want a port number`, `log.level / SERVICE_LOG_LEVEL / --log-level: "verbose" is not one of debug, info, warn, error`}},
		{"bool yes", "", map[string]string{"SERVICE_OIDC_PASSWORD_LOGIN": "yes"}, nil,
			[]string{`SERVICE_OIDC_PASSWORD_LOGIN="yes" is not valid: want true or false`}},
		{"misspelt file key", "server:\n  prot: 80\n", nil, nil,
			[]string{"line 2: server.prot is not a setting; the keys under server are: host, port,"}},
		{"duration without unit", "server:\n  shutdownTimeout: 30\n", nil, nil,
			[]string{`line 2: server.shutdownTimeout: "30" is not valid: want a duration with a unit, such as 500ms, 30s`}},
		{"misspelt key in a list item", "auth:\n  roles:\n    - name: SRE\n      extnds: USER\n", nil, nil,
			[]string{"line 4: auth.roles[0].extnds is not a setting; the keys under auth.roles[0] are: name, extends, permissions"}},
		{"wrong type in a list item", "auth:\n  roles:\n    - name: SRE\n      permissions: read\n", nil, nil,
			[]string{`line 4: auth.roles[0].permissions: "read" is not valid: want a list`}},
		{"unknown top-level key", "sever:\n  port: 1\n", nil, nil,
			[]string{"line 1: sever is not a setting; the keys at the top level are: server, dataDir, log"}},
		{"every source at once", "log:\n  level: loud\nserver:\n  port: many\n",
			map[string]string{"SERVICE_SHUTDOWN_TIMEOUT": "soon"}, map[string]string{"management-port": "x", "auth-debug": "maybe"},
			[]string{`line 4: server.port: "many" is not valid`, `SERVICE_SHUTDOWN_TIMEOUT="soon" is not valid: want a duration`,
				`--management-port="x" is not valid`, `--auth-debug="maybe" is not valid: want true or false`, `log.level / SERVICE_LOG_LEVEL / --log-level: "loud"`}},
		{"flag beats environment", "", map[string]string{"SERVICE_PORT": "abc"}, map[string]string{"port": "99999"},
			[]string{`SERVICE_PORT="abc" is not valid`, "server.port / SERVICE_PORT / --port: 99999 is not a port number"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			if tt.file != "" {
				path = writeFile(t, tt.file)
			}
			_, err := Resolve(path, tt.env, tt.flags)
			if err == nil {
				t.Fatal("Resolve succeeded, want the problems")
			}
			msg := err.Error()
			for _, w := range tt.wants {
				if !strings.Contains(msg, w) {
					t.Errorf("missing %q in:\n%s", w, msg)
				}
			}
			for _, w := range goWords {
				if strings.Contains(msg, w) {
					t.Errorf("Go's words %q in:\n%s", w, msg)
				}
			}
		})
	}
}

// TestFlagsOverrideEnvironmentOverFile: the flag of a setting parses like
// its variable and wins.
func TestFlagsOverrideEnvironmentOverFile(t *testing.T) {
	path := writeFile(t, "server:\n  port: 1000\n  shutdownTimeout: 5s\nlog:\n  level: warn\n")
	cfg, err := Resolve(path, map[string]string{"SERVICE_PORT": "2000", "SERVICE_SHUTDOWN_TIMEOUT": "7s"},
		map[string]string{"port": "3000", "auth-debug": "true"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.Port != 3000 || cfg.Server.ShutdownTimeout != 7*time.Second || cfg.Log.Level != "warn" || !cfg.Auth.Debug {
		t.Errorf("got port %d timeout %s level %s debug %v, want 3000 (flag) 7s (env) warn (file) true (flag)",
			cfg.Server.Port, cfg.Server.ShutdownTimeout, cfg.Log.Level, cfg.Auth.Debug)
	}
}

// TestSettingsTableCoversConfig: every environment variable and config key
// of Config is in Settings with the same names, and Settings names nothing
// Config lacks, so help, documentation and errors cannot drift from what
// is read. A new setting needs its row in config/settings.go.
func TestSettingsTableCoversConfig(t *testing.T) {
	type named struct{ key, env string }
	var fields []named
	var walk func(t reflect.Type, prefix string)
	walk = func(rt reflect.Type, prefix string) {
		for i := 0; i < rt.NumField(); i++ {
			f := rt.Field(i)
			key := f.Tag.Get("yaml")
			if key != "" && key != "-" {
				key = prefix + key
			} else {
				key = ""
			}
			if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(time.Duration(0)) {
				walk(f.Type, key+".")
				continue
			}
			fields = append(fields, named{key, f.Tag.Get("env")})
		}
	}
	walk(reflect.TypeOf(Config{}), "")
	for _, f := range fields {
		found := false
		for _, s := range Settings {
			if s.Key == f.key && s.Env == f.env {
				found = true
			}
		}
		if !found {
			t.Errorf("Config field with key %q and variable %q has no row in Settings (config/settings.go)", f.key, f.env)
		}
	}
	for _, s := range Settings {
		if s.Env == "SERVICE_CONFIG" {
			continue // read by the command, before the file
		}
		found := false
		for _, f := range fields {
			if s.Key == f.key && s.Env == f.env {
				found = true
			}
		}
		if !found {
			t.Errorf("Settings row %s is not a field of Config", s.Names())
		}
		if s.Default == "" || s.Accepts == "" || s.Help == "" {
			t.Errorf("Settings row %s lacks a default, accepted values or help", s.Names())
		}
	}
}

// TestSettingsShowTheDefaults: the Default column of Settings (help and
// the documentation tables) says what Defaults() sets, so the defaults
// are written in one place and the table cannot drift from it. A row
// whose field Defaults leaves empty says so in words ("none …").
func TestSettingsShowTheDefaults(t *testing.T) {
	byKey := map[string]reflect.Value{}
	var walk func(v reflect.Value, prefix string)
	walk = func(v reflect.Value, prefix string) {
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			key := f.Tag.Get("yaml")
			if key == "" || key == "-" {
				continue
			}
			if f.Type.Kind() == reflect.Struct {
				walk(v.Field(i), prefix+key+".")
				continue
			}
			byKey[prefix+key] = v.Field(i)
		}
	}
	walk(reflect.ValueOf(Defaults()), "")
	for _, s := range Settings {
		v, ok := byKey[s.Key]
		if !ok || s.Key == "dataDir" {
			continue // dataDir's default depends on the environment
		}
		var same bool
		shown, _, _ := strings.Cut(s.Default, " ") // "0 (off)", "2160h (90 days)"
		switch x := v.Interface().(type) {
		case time.Duration:
			d, err := time.ParseDuration(shown)
			same = (err == nil && d == x) || (x == 0 && err != nil)
		case int:
			same = shown == fmt.Sprint(x) || (x == 0 && strings.HasPrefix(s.Default, "none"))
		case string:
			same = s.Default == x || (x == "" && !strings.ContainsAny(s.Default, "0123456789"))
		default:
			continue
		}
		if !same {
			t.Errorf("%s: Settings says the default is %q, Defaults() sets %v", s.Key, s.Default, v.Interface())
		}
	}
}
