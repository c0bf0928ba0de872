// Command agentauth is the authentication and access-control service.
//
//	agentauth serve [--config FILE] [--api-key KEY] [--host H] [--port P] [--data-dir DIR]
//
// The authentication mode follows from the settings (see the README): OIDC
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
  agentauth serve [flags]   run the server (see agentauth serve -h)
  agentauth policy can ...  may a role do an action? (see agentauth policy)
  agentauth oidc check      check the OIDC settings against the provider (see agentauth oidc)
  agentauth version         print the version
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
		return serve(args[1:], env, stderr)
	case "policy":
		return policy(args[1:], env, stdout, stderr)
	case "oidc":
		return oidcCommand(args[1:], env, osStdin, stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, versionLine())
		return exitOK
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "agentauth: unknown command %q\n\n%s", args[0], usage)
	return exitUsage
}

// serveFlags are the command-line settings of serve; they override the
// environment and the config file.
type serveFlags struct {
	fs      *flag.FlagSet
	config  string
	apiKey  string
	host    string
	port    int
	mgmt    int
	dataDir string
	proxies string
}

func parseServeFlags(args []string, stderr io.Writer) (*serveFlags, error) {
	f := &serveFlags{fs: flag.NewFlagSet("serve", flag.ContinueOnError)}
	f.fs.SetOutput(stderr)
	f.fs.StringVar(&f.config, "config", "", "YAML config file (SERVICE_CONFIG)")
	f.fs.StringVar(&f.apiKey, "api-key", "", "API key granting ADMIN (SERVICE_API_KEY); prefer the variable: flags show in ps")
	f.fs.StringVar(&f.host, "host", "", "listen address (SERVICE_HOST, default 127.0.0.1)")
	f.fs.IntVar(&f.port, "port", 0, "listen port (SERVICE_PORT, default 8080)")
	f.fs.IntVar(&f.mgmt, "management-port", 0, "management listener port: probes and metrics without credentials (SERVICE_MANAGEMENT_PORT, default off)")
	f.fs.StringVar(&f.dataDir, "data-dir", "", "data folder (SERVICE_DATA_DIR)")
	f.fs.StringVar(&f.proxies, "trusted-proxies", "", "comma-separated CIDRs of proxies whose X-Forwarded-For is believed (SERVICE_TRUSTED_PROXIES)")
	if err := f.fs.Parse(args); err != nil {
		return nil, err
	}
	if f.fs.NArg() > 0 {
		return nil, fmt.Errorf("serve takes no arguments, got %q", f.fs.Args())
	}
	return f, nil
}

// apply overrides cfg with the flags that were given.
func (f *serveFlags) apply(cfg *config.Config) {
	f.fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "api-key":
			cfg.Auth.APIKey = f.apiKey
		case "host":
			cfg.Server.Host = f.host
		case "port":
			cfg.Server.Port = f.port
		case "management-port":
			cfg.Server.ManagementPort = f.mgmt
		case "data-dir":
			cfg.DataDir = f.dataDir
		case "trusted-proxies":
			cfg.Server.TrustedProxies = nil // an empty flag trusts no proxy
			if f.proxies != "" {
				cfg.Server.TrustedProxies = strings.Split(f.proxies, ",")
			}
		}
	})
}

// loadConfig reads flags, file and environment in order of precedence.
func loadConfig(args []string, env map[string]string, stderr io.Writer) (config.Config, error) {
	flags, err := parseServeFlags(args, stderr)
	if err != nil {
		return config.Config{}, err
	}
	path := env["SERVICE_CONFIG"]
	if flags.config != "" {
		path = flags.config
	}
	cfg, err := config.Load(path, env)
	if err != nil {
		return config.Config{}, err
	}
	flags.apply(&cfg)
	return cfg, cfg.Validate()
}

func serve(args []string, env map[string]string, stderr io.Writer) int {
	cfg, err := loadConfig(args, env, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "agentauth: configuration is not valid:\n%s\n", indent(err.Error()))
		return exitUsage
	}
	log, flush, err := newLogger(cfg.Log.Level, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "agentauth: %v\n", err)
		return exitUsage
	}
	defer flush()

	srv, cleanup, err := inject(cfg, log)
	if err != nil {
		log.Error("cannot start", zap.Error(err))
		return exitFailure
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log.Info("agentauth starting", zap.String("version", buildinfo.Get().Version), zap.String("revision", buildinfo.Get().Revision), zap.String("mode", string(cfg.Mode())), zap.String("addr", cfg.Addr()))
	err = srv.Run(ctx)
	cleanup() // commits pending audit records, then closes the store
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

func indent(s string) string { return "  - " + strings.ReplaceAll(s, "\n", "\n  - ") }
