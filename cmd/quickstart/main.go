// Command quickstart runs agentauth in OIDC mode against the Keycloak
// stand-in on this machine, for a first sign-in within a minute of a fresh
// clone:
//
//	go tool task quickstart:oidc          # or: go run ./cmd/quickstart
//	go run ./cmd/quickstart -port 0 -idp-port 0   # any free ports
//
// It builds agentauth, starts the stand-in (e2e/keycloak-standin, Node) with
// the realm of deploy/keycloak/realm-agents.json and agentauth against it
// with a fresh data folder, signs every user of the realm in once by
// password to show the role and subject agentauth gives them, and prints the
// URLs, users and passwords. Ctrl-C (or SIGTERM) stops both and removes the
// data folder. The stand-in's test users and client secret are public: this
// is for a laptop, never a network.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/agentauth/agentauth/internal/launch"
	"github.com/agentauth/agentauth/internal/standin"
)

// The documented ports: the realm file registers the service's redirect
// URIs on 18080, and the stand-in's README runs it on 8180.
const (
	defaultPort    = 18080
	defaultIDPPort = 8180
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("quickstart", flag.ContinueOnError)
	port := fs.Int("port", defaultPort, "agentauth's port on 127.0.0.1 (0: any free port)")
	idpPort := fs.Int("idp-port", defaultIDPPort, "the Keycloak stand-in's port on 127.0.0.1 (0: any free port)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	root, err := repositoryRoot()
	if err != nil {
		return err
	}
	servicePort, err := usablePort(*port, "-port")
	if err != nil {
		return err
	}
	if *idpPort != 0 {
		if _, err := usablePort(*idpPort, "-idp-port"); err != nil {
			return err
		}
	}
	tmp, err := os.MkdirTemp("", "agentauth-quickstart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	fmt.Fprintln(stdout, "Building agentauth and starting the Keycloak stand-in …")
	bin, err := launch.Build(ctx, root, tmp)
	if err != nil {
		return err
	}
	idpLog, err := os.Create(filepath.Join(tmp, "keycloak-standin.log"))
	if err != nil {
		return err
	}
	defer idpLog.Close()
	idp, err := standin.Start(root, *idpPort, servicePort, idpLog)
	if err != nil {
		return fmt.Errorf("%w (its log: %s)", err, idpLog.Name())
	}
	defer idp.Stop()

	svc, err := launch.Start(bin, serviceEnv(tmp, idp.Issuer, servicePort), 30*time.Second, "serve")
	if err != nil {
		return err
	}
	defer svc.Kill()
	users, err := standin.Users(root)
	if err != nil {
		return err
	}
	printWelcome(stdout, svc.URL, idp.Issuer, signIn(ctx, svc.URL, users))

	select {
	case <-ctx.Done():
	case <-idp.Exited():
		return errors.New("the Keycloak stand-in stopped; its log: " + idpLog.Name())
	}
	fmt.Fprintln(stdout, "Stopping agentauth and the stand-in …")
	if code, err := svc.Stop(30 * time.Second); err != nil || code != 0 {
		return fmt.Errorf("agentauth stopped with exit code %d (%v):\n%s", code, err, svc.Stderr())
	}
	return nil
}

// serviceEnv is agentauth's whole environment: OIDC mode against issuer,
// the stand-in's client, a fresh data folder, nothing else inherited.
func serviceEnv(tmp, issuer string, port int) []string {
	data := filepath.Join(tmp, "data")
	return []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + tmp, "SERVICE_DATA_DIR=" + data,
		"SERVICE_HOST=127.0.0.1", fmt.Sprintf("SERVICE_PORT=%d", port),
		"SERVICE_OIDC_ENABLED=true", "SERVICE_OIDC_ISSUER=" + issuer,
		"SERVICE_OIDC_CLIENT_ID=" + standin.ClientID, "SERVICE_OIDC_CLIENT_SECRET=" + standin.ClientSecret,
		fmt.Sprintf("SERVICE_OIDC_REDIRECT_URI=http://127.0.0.1:%d/auth/callback", port),
	}
}

// repositoryRoot is the checkout the command runs in: the folder, this one
// or above, holding the stand-in and the realm file.
func repositoryRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "e2e", "keycloak-standin", "server.mjs")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, standin.RealmFile)); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run it inside the agentauth repository (it needs e2e/keycloak-standin and deploy/keycloak)")
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

// account is a user of the realm as agentauth sees it after a password
// login.
type account struct {
	standin.User
	Subject string
	Roles   []string
	Err     error
}

// signIn logs every user in once by password (POST /auth/login), so that
// the table shows what agentauth itself decided: the subject and the roles.
func signIn(ctx context.Context, base string, users []standin.User) []account {
	out := make([]account, 0, len(users))
	for _, u := range users {
		a := account{User: u}
		a.Subject, a.Roles, a.Err = passwordLogin(ctx, base, u)
		out = append(out, a)
	}
	return out
}

func passwordLogin(ctx context.Context, base string, u standin.User) (string, []string, error) {
	body, _ := json.Marshal(map[string]string{"username": u.Username, "password": u.Password})
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/auth/login", bytes.NewReader(body))
	if err != nil {
		return "", nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", nil, err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if res.StatusCode != http.StatusOK {
		return "", nil, fmt.Errorf("POST /auth/login answered %d: %s", res.StatusCode, strings.TrimSpace(string(b)))
	}
	var who struct {
		Subject string   `json:"subject"`
		Roles   []string `json:"roles"`
	}
	if err := json.Unmarshal(b, &who); err != nil {
		return "", nil, fmt.Errorf("POST /auth/login: %w", err)
	}
	return who.Subject, who.Roles, nil
}

func printWelcome(w io.Writer, base, issuer string, accounts []account) {
	fmt.Fprintf(w, `
agentauth runs in OIDC mode against the Keycloak stand-in (realm %q).

  Sign in (browser):  %s/auth/login
  Who am I:           %s/api/v2/me
  Identity provider:  %s

Users of deploy/keycloak/realm-agents.json, each signed in once to show what agentauth makes of them:

`, standin.Realm, base, base, issuer)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  USER\tPASSWORD\tROLE\tSUBJECT (the token's sub)")
	for _, a := range accounts {
		if a.Err != nil {
			fmt.Fprintf(tw, "  %s\t%s\tsign-in failed: %v\t\n", a.Username, a.Password, a.Err)
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", a.Username, a.Password, strings.Join(a.Roles, ","), a.Subject)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, `
Password login from a shell (the cookie is the session):

  curl -c jar -H 'Content-Type: application/json' -d '{"username":"alice","password":"alice-pw"}' %s/auth/login
  curl -b jar %s/api/v2/me

agentauth names a user by the token's sub (a UUID in Keycloak), not the user name: use the
SUBJECT column where a project member or a policy names a user (docs/operators.md: "Who is who").

Ctrl-C stops both and deletes the data folder.
`, base, base)
}
