// Package standin runs the Keycloak stand-in of e2e/keycloak-standin (a
// Node program imitating one Keycloak realm) from a checkout, for the
// commands that need an OpenID provider on this machine: the OIDC quick
// start and the load generator. The realm is deploy/keycloak/realm-agents.json,
// the one the e2e suite and a real Keycloak import.
package standin

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// The realm file's realm and the client agentauth is registered as.
const (
	Realm        = "agents"
	ClientID     = "agentauth"
	ClientSecret = "agentauth-e2e-secret"
)

// RealmFile is the realm export, relative to the repository.
var RealmFile = filepath.Join("deploy", "keycloak", "realm-agents.json")

// startTimeout bounds the wait for the stand-in's "listening on" line.
const startTimeout = 30 * time.Second

// Provider is a running stand-in.
type Provider struct {
	// Issuer is the realm's issuer URL, http://127.0.0.1:P/realms/agents.
	Issuer string
	cmd    *exec.Cmd
	exited chan struct{}
}

// Start installs the stand-in's pinned packages when they are missing (npm
// ci from its lock file) and starts it on 127.0.0.1:port (0: any free port)
// with the realm file's loopback redirect URIs moved to servicePort, where
// agentauth is to listen. root is the repository; what npm and the stand-in
// write goes to log.
func Start(root string, port, servicePort int, log io.Writer) (*Provider, error) {
	if _, err := exec.LookPath("node"); err != nil {
		return nil, errors.New("the Keycloak stand-in needs Node.js 20 or later and npm (Debian: apt-get install nodejs npm)")
	}
	root, err := filepath.Abs(root) // node runs in the stand-in's folder
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, "e2e", "keycloak-standin")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "oidc-provider")); err != nil {
		npm := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		npm.Dir, npm.Stdout, npm.Stderr = dir, log, log
		if err := npm.Run(); err != nil {
			return nil, fmt.Errorf("npm ci in %s: %w", dir, err)
		}
	}
	cmd := exec.Command("node", "server.mjs", "--realm-file", filepath.Join(root, RealmFile),
		"--port", fmt.Sprint(port), "--service-url", fmt.Sprintf("http://127.0.0.1:%d", servicePort))
	cmd.Dir, cmd.Stderr = dir, log
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the Keycloak stand-in (node): %w", err)
	}
	p := &Provider{cmd: cmd, exited: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(log, line)
			if i := strings.Index(line, "http"); strings.Contains(line, "listening on ") && i >= 0 {
				select {
				case found <- strings.TrimSpace(line[i:]):
				default:
				}
			}
		}
		_ = cmd.Wait()
		close(p.exited)
	}()
	select {
	case p.Issuer = <-found:
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("the Keycloak stand-in exited before listening (%v)", cmd.ProcessState)
	case <-time.After(startTimeout):
		p.Stop()
		return nil, fmt.Errorf("the Keycloak stand-in did not listen within %s", startTimeout)
	}
}

// Exited is closed once the stand-in has ended.
func (p *Provider) Exited() <-chan struct{} { return p.exited }

// Stop ends the stand-in (SIGTERM, SIGKILL after 5 s) and waits for it.
func (p *Provider) Stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// User is a user of the realm file with the password it sets.
type User struct {
	Username, Password string
}

// Users lists the realm file's users that have a password, in file order.
func Users(root string) ([]User, error) {
	b, err := os.ReadFile(filepath.Join(root, RealmFile))
	if err != nil {
		return nil, err
	}
	var realm struct {
		Users []struct {
			Username    string `json:"username"`
			Enabled     bool   `json:"enabled"`
			Credentials []struct {
				Type  string `json:"type"`
				Value string `json:"value"`
			} `json:"credentials"`
		} `json:"users"`
	}
	if err := json.Unmarshal(b, &realm); err != nil {
		return nil, fmt.Errorf("%s: %w", RealmFile, err)
	}
	var out []User
	for _, u := range realm.Users {
		for _, c := range u.Credentials {
			if u.Enabled && c.Type == "password" {
				out = append(out, User{Username: u.Username, Password: c.Value})
				break
			}
		}
	}
	return out, nil
}
