// Command quickstart runs agentauth on this machine with everything a
// first try needs, on loopback, from a fresh clone:
//
//	go tool task quickstart:keycloak  # quickstart keycloak: OIDC mode against the real Keycloak (Java)
//	go tool task quickstart:oidc      # quickstart oidc: OIDC mode against the Keycloak stand-in (Node)
//	go tool task quickstart:gateway   # quickstart gateway: the MCP gateway in front of a sample server
//	go run ./cmd/quickstart notes     # the sample MCP server alone (docs/gateway.md's walkthrough)
//
// -port 0 (and for keycloak and oidc -idp-port 0) takes any free ports. Ctrl-C (or
// SIGTERM) stops what it started and removes its data folder. What it
// prints (keys, test users' passwords) is for a laptop, never a network.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
)

// defaultPort is agentauth's port: the realm file of the stand-in
// registers the service's redirect URIs on it.
const defaultPort = 18080

const usage = `usage: quickstart keycloak|oidc|gateway|notes [flags]   (quickstart COMMAND -h: its flags)`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "keycloak":
		return runOIDC(ctx, args[1:], stdout, true)
	case "oidc":
		return runOIDC(ctx, args[1:], stdout, false)
	case "gateway":
		return runGateway(ctx, args[1:], stdout)
	case "notes":
		return runNotes(ctx, args[1:], stdout)
	}
	return fmt.Errorf("unknown command %q; %s", args[0], usage)
}

// repositoryRoot is the checkout the command runs in: the folder, this one
// or above, holding cmd/agentauth and each of need.
func repositoryRoot(need ...string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	need = append([]string{filepath.Join("cmd", "agentauth", "main.go")}, need...)
	for {
		found := true
		for _, n := range need {
			if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
				found = false
				break
			}
		}
		if found {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("run it inside the agentauth repository (it needs %v)", need)
		}
		dir = parent
	}
}

// usablePort returns port, checked free on 127.0.0.1, or a free one for 0.
// A port found free here may be taken before agentauth binds it; the start
// then fails naming it.
func usablePort(port int, flagName string) (int, error) {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return 0, fmt.Errorf("port %d is taken: choose another with %s N, or %s 0 for any free port", port, flagName, flagName)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
