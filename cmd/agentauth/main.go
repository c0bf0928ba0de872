// Command agentauth is the authentication and access-control service.
//
//	agentauth serve [--config FILE] [--api-key KEY] [--host H] [--port P] [--data-dir DIR]
//
// The authentication mode follows from the settings (see docs/operators.md): OIDC
// when SERVICE_OIDC_ENABLED=true, debug when SERVICE_AUTH_DEBUG=true, API key
// when a key is given, else local mode with a key file in the data folder.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/rest"
	"github.com/agentauth/agentauth/config"
	"github.com/agentauth/agentauth/internal/buildinfo"
	"github.com/agentauth/agentauth/internal/datadir"
	"github.com/agentauth/agentauth/wire"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

func main() {
	os.Exit(run(os.Args[1:], environ(), os.Stdout, os.Stderr))
}

func environ() map[string]string {
	m := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

const usage = `agentauth: the authentication and access-control core of an agent service

Usage:
  agentauth serve [flags]   run the server (agentauth serve --help lists every setting)
  agentauth policy can ...  may a role do an action? (agentauth policy --help)
  agentauth oidc check      check the OIDC settings against the provider (agentauth oidc --help)
  agentauth audit verify    verify the audit log offline (agentauth audit --help)
  agentauth audit public-key  print the public key audit checkpoints are signed with
  agentauth version         print the version (also --version)
`

// versionLine says which build runs (see internal/buildinfo).
func versionLine() string {
	b := buildinfo.Get()
	return fmt.Sprintf("agentauth %s (revision %s, %s)", b.Version, b.Revision, b.GoVersion)
}

func run(args []string, env map[string]string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], env, stdout, stderr)
	case "policy":
		return policy(args[1:], env, stdout, stderr)
	case "oidc":
		return oidcCommand(args[1:], env, osStdin, stdout, stderr)
	case "audit":
		return auditCommand(args[1:], env, stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, versionLine())
		return exitOK
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, usage+"\n"+settingsHelp())
		return exitOK
	}
	fmt.Fprintf(stderr, "agentauth: unknown command %q\n\n%s", args[0], usage)
	return exitUsage
}

// settingFlag is the flag of one setting. It keeps the text as given: the
// configuration parses flags exactly as the environment variables, so a
// flag accepts what its variable accepts and a bad value is reported the
// same way.
type settingFlag struct {
	value  string
	isBool bool
}

func (f *settingFlag) String() string     { return f.value }
func (f *settingFlag) Set(v string) error { f.value = v; return nil }
func (f *settingFlag) IsBoolFlag() bool   { return f.isBool }

// parseServeFlags returns the flags given (name → value), one per setting of
// config.Settings that has a flag, and the problems of the command line
// (unknown flags, stray arguments), reported with the configuration's. err
// is a command line the flag package could not read (already on stderr).
func parseServeFlags(args []string, stderr io.Writer) (given map[string]string, problems []error, err error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, "run 'agentauth serve --help' for every setting") }
	for _, s := range config.Settings {
		if s.Flag != "" {
			fs.Var(&settingFlag{isBool: strings.HasPrefix(s.Accepts, "true or false")}, s.Flag, s.Help)
		}
	}
	args, problems = dropUnknownFlags(args, func(name string) bool { return fs.Lookup(name) != nil })
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	if fs.NArg() > 0 {
		problems = append(problems, fmt.Errorf("serve takes no arguments, got %q", fs.Args()))
	}
	given = map[string]string{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = f.Value.String() })
	return given, problems, nil
}

// dropUnknownFlags removes the flags known does not know (with the value
// after one given as --name value) so that the flag package, which stops at
// the first, can read the rest; each becomes a problem naming it.
func dropUnknownFlags(args []string, known func(string) bool) (kept []string, problems []error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(kept, args[i:]...), problems
		}
		if len(a) < 2 || a[0] != '-' {
			kept = append(kept, a)
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if known(name) {
			kept = append(kept, a)
			continue
		}
		problems = append(problems, fmt.Errorf("--%s is not a flag of agentauth serve; 'agentauth serve --help' lists every setting", name))
		if !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			i++ // its value
		}
	}
	return kept, problems
}

// configFromCommandLine reads the serve flags and the configuration. On
// any problem it prints them all, from every source, and ok is false.
func configFromCommandLine(args []string, env map[string]string, stderr io.Writer) (cfg config.Config, ok bool) {
	flags, problems, err := parseServeFlags(args, stderr)
	if err != nil {
		return config.Config{}, false
	}
	cfg, err = loadConfig(flags, env)
	if err = errors.Join(append(problems, err)...); err != nil {
		fmt.Fprintf(stderr, "agentauth: configuration is not valid:\n%s\n", indent(err.Error()))
		return config.Config{}, false
	}
	return cfg, true
}

// loadConfig reads defaults, file, environment and flags in this order of
// precedence and validates the result; every problem of every source is
// in the error.
func loadConfig(flags, env map[string]string) (config.Config, error) {
	path := env["SERVICE_CONFIG"]
	if f, ok := flags["config"]; ok {
		path = f
	}
	return config.Resolve(path, env, flags)
}

func serve(args []string, env map[string]string, stdout, stderr io.Writer) int {
	if wantsHelp(args) {
		fmt.Fprint(stdout, serveHelp())
		return exitOK
	}
	cfg, ok := configFromCommandLine(args, env, stderr)
	if !ok {
		return exitUsage
	}
	log, flush, err := newLogger(cfg.Log.Level, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "agentauth: %v\n", err)
		return exitUsage
	}
	defer flush()
	for _, w := range config.IgnoredVariables(env) {
		log.Warn(w)
	}

	if err := datadir.Secure(cfg.DataDir, log); err != nil {
		return cannotStart(stderr, flush, err)
	}
	srv, cleanup, err := inject(cfg, log)
	if err != nil {
		return cannotStart(stderr, flush, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log.Info("agentauth starting", zap.String("version", buildinfo.Get().Version), zap.String("revision", buildinfo.Get().Revision), zap.String("mode", string(cfg.Mode())), zap.String("addr", cfg.Addr()))
	err = srv.Run(ctx)
	cleanup() // commits pending audit records, then closes the store
	if listen := (*rest.ListenError)(nil); errors.As(err, &listen) {
		return cannotStart(stderr, flush, err)
	}
	if err != nil {
		log.Error("server stopped with an error", zap.Error(err))
		return exitFailure
	}
	log.Info("stopped cleanly")
	return exitOK
}

// inject picks the Wire injector of the configured mode.
func inject(cfg config.Config, log *zap.Logger) (*rest.Server, func(), error) {
	switch mode := cfg.Mode(); mode {
	case config.ModeHybrid:
		log.Info("hybrid mode: every caller's roles come from the central instance; none are assigned here", zap.String("remote", cfg.Auth.Hybrid.RemoteURL))
		return wire.Hybrid(cfg, log)
	case config.ModeLocal:
		return wire.Local(cfg, log)
	case config.ModeAPIKey:
		return wire.APIKey(cfg, log)
	case config.ModeOIDC:
		return wire.OIDC(cfg, log)
	case config.ModeDebug:
		log.Warn("DEBUG MODE: built-in keys debug-admin, debug-user, debug-lead and debug-auditor are accepted; real identity checking is OFF. Never run this in production.")
		return wire.Debug(cfg, log)
	default:
		return nil, nil, fmt.Errorf("authentication mode %q is not available in this build", mode)
	}
}

// cannotStart tells why the service did not start as configuration
// problems are told: plain lines, each naming the setting at fault (the
// data folder, a key file, the database, a port), and exit code 2. The log
// is flushed first, so the lines come last.
func cannotStart(stderr io.Writer, flushLog func(), err error) int {
	flushLog()
	// Drivers continue a message on tab-indented lines (pgx: one per
	// address tried): keep each problem on one line.
	msg := strings.ReplaceAll(strings.ReplaceAll(err.Error(), ":\n\t", ": "), "\n\t", "; ")
	fmt.Fprintf(stderr, "agentauth: cannot start:\n%s\n", indent(msg))
	return exitUsage
}

func indent(s string) string { return "  - " + strings.ReplaceAll(s, "\n", "\n  - ") }
