package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentauth/agentauth/internal/keycloakserver"
	"github.com/agentauth/agentauth/internal/launch"
	"github.com/agentauth/agentauth/internal/standin"
)

// The provider's documented port (the stand-in's README runs it on 8180).
const defaultIDPPort = 8180

// runOIDC is quickstart keycloak (useKeycloak: the real Keycloak, from the
// cache .ci/keycloak fills, see internal/keycloakserver) and quickstart
// oidc (the Keycloak stand-in on Node), each with the realm of
// deploy/keycloak/realm-agents.json, and agentauth in OIDC mode against it.
func runOIDC(ctx context.Context, args []string, stdout io.Writer, useKeycloak bool) error {
	name := "quickstart oidc"
	if useKeycloak {
		name = "quickstart keycloak"
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	port := fs.Int("port", defaultPort, "agentauth's port on 127.0.0.1 (0: any free port)")
	idpPort := fs.Int("idp-port", defaultIDPPort, "the provider's port on 127.0.0.1 (0: any free port)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	root, err := repositoryRoot(filepath.Join("e2e", "keycloak-standin", "server.mjs"), standin.RealmFile)
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

	idpName := "the Keycloak stand-in"
	if useKeycloak {
		idpName = "Keycloak " + keycloakserver.Version
	}
	fmt.Fprintf(stdout, "Building agentauth and starting %s …\n", idpName)
	bin, err := launch.Build(ctx, root, tmp)
	if err != nil {
		return err
	}
	idpLog, err := os.Create(filepath.Join(tmp, "identity-provider.log"))
	if err != nil {
		return err
	}
	defer idpLog.Close()
	idp, err := startProvider(ctx, root, useKeycloak, *idpPort, servicePort, idpLog)
	if err != nil {
		b, _ := os.ReadFile(idpLog.Name()) // the folder goes when this returns
		return fmt.Errorf("%w; its log ends:\n%s", err, lastLines(string(b), 20))
	}
	defer idp.stop()

	svc, err := launch.Start(bin, serviceEnv(tmp, idp.issuer, servicePort), 30*time.Second, "serve")
	if err != nil {
		return err
	}
	defer svc.Kill()
	users, err := standin.Users(root)
	if err != nil {
		return err
	}
	printWelcome(stdout, idpName, svc.URL, idp, signIn(ctx, svc.URL, users))

	select {
	case <-ctx.Done():
	case <-idp.exited:
		b, _ := os.ReadFile(idpLog.Name())
		return fmt.Errorf("%s stopped; its log ends:\n%s", idpName, lastLines(string(b), 20))
	}
	fmt.Fprintf(stdout, "Stopping agentauth and %s …\n", idpName)
	if code, err := svc.Stop(30 * time.Second); err != nil || code != 0 {
		return fmt.Errorf("agentauth stopped with exit code %d (%v):\n%s", code, err, svc.Stderr())
	}
	return nil
}

// provider is the running identity provider.
type provider struct {
	issuer string
	// admin is Keycloak's admin console and its bootstrap admin ("" for
	// the stand-in, which has none).
	admin, adminUser, adminPassword string
	exited                          <-chan struct{}
	stop                            func()
}

// startProvider starts the real Keycloak or the stand-in on idpPort (0:
// a free one) with the realm's agentauth URLs on servicePort.
func startProvider(ctx context.Context, root string, useKeycloak bool, idpPort, servicePort int, log io.Writer) (*provider, error) {
	if !useKeycloak {
		p, err := standin.Start(root, idpPort, servicePort, log)
		if err != nil {
			return nil, err
		}
		return &provider{issuer: p.Issuer, exited: p.Exited(), stop: p.Stop}, nil
	}
	const user, password = "admin", "admin" // loopback only, like the realm's test users
	s, err := keycloakserver.Start(ctx, keycloakserver.Options{
		RealmFile: filepath.Join(root, standin.RealmFile), ServicePort: servicePort, Port: idpPort,
		AdminUser: user, AdminPassword: password, Log: log,
	})
	if err != nil {
		return nil, err
	}
	return &provider{issuer: s.Issuer(standin.Realm), admin: s.URL + "/admin/master/console/#/" + standin.Realm,
		adminUser: user, adminPassword: password, exited: s.Exited(), stop: func() { _ = s.Stop() }}, nil
}

// lastLines is the last n lines of text.
func lastLines(text string, n int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
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

func printWelcome(w io.Writer, idpName, base string, idp *provider, accounts []account) {
	fmt.Fprintf(w, `
agentauth runs in OIDC mode against %s (realm %q).

  Sign in (browser):  %s/auth/login
  Who am I:           %s/api/v2/me
  Identity provider:  %s
`, idpName, standin.Realm, base, base, idp.issuer)
	if idp.admin != "" {
		fmt.Fprintf(w, "  Keycloak's admin:   %s (%s / %s)\n", idp.admin, idp.adminUser, idp.adminPassword)
	}
	fmt.Fprint(w, `
Users of deploy/keycloak/realm-agents.json, each signed in once to show what agentauth makes of them:

`)
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
