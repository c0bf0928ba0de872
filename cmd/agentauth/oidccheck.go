package main

// agentauth oidc check: the answer to the specification's troubleshooting
// notes. It checks discovery, TLS trust, the JWKS and the client
// credentials, and for a test login prints which roles were found in which
// token, which were dropped and why, and the role the service grants.

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/identity/keycloak"
	"github.com/agentauth/agentauth/config"
	"github.com/agentauth/agentauth/domain"
)

const oidcUsage = `Usage:
  agentauth oidc check [--config FILE] [--username U]

Checks the OIDC settings (SERVICE_OIDC_*) against the provider: discovery,
TLS trust, JWKS, client credentials, and with --username a test login that
shows where each role came from. The password is read from
AGENTAUTH_CHECK_PASSWORD, else from the first line of standard input; it is
never a flag (flags show in ps).
`

// largeToken is the size above which a token risks overflowing proxies'
// header buffers (commonly 8 KiB for all headers).
const largeToken = 6 << 10

func oidcCommand(args []string, env map[string]string, stdin io.Reader, stdout, stderr io.Writer) int {
	if wantsHelp(args) {
		fmt.Fprint(stdout, oidcUsage)
		return exitOK
	}
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprint(stderr, oidcUsage)
		return exitUsage
	}
	fs := flag.NewFlagSet("oidc check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", env["SERVICE_CONFIG"], "YAML config file (SERVICE_CONFIG)")
	username := fs.String("username", "", "log in as this user and explain the roles")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	cfg, err := config.Load(*cfgPath, env)
	if err != nil {
		fmt.Fprintf(stderr, "agentauth: %v\n", err)
		return exitUsage
	}
	cfg.Auth.OIDC.Enabled = true // check the settings even if OIDC is not switched on yet
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "agentauth: configuration is not valid:\n%s\n", indent(err.Error()))
		return exitUsage
	}
	password := ""
	if *username != "" {
		password = env["AGENTAUTH_CHECK_PASSWORD"]
		if password == "" {
			line, err := bufio.NewReader(stdin).ReadString('\n')
			if err != nil && line == "" {
				fmt.Fprintln(stderr, "agentauth: --username needs the password in AGENTAUTH_CHECK_PASSWORD or on standard input")
				return exitUsage
			}
			password = strings.TrimRight(line, "\r\n")
		}
	}
	c := &checker{out: stdout, ok: true}
	c.run(cfg.Auth.OIDC, *username, password)
	if !c.ok {
		return exitFailure
	}
	return exitOK
}

type checker struct {
	out io.Writer
	ok  bool
}

func (c *checker) pass(format string, args ...any) {
	fmt.Fprintf(c.out, "  ok    "+format+"\n", args...)
}

func (c *checker) fail(format string, args ...any) {
	c.ok = false
	fmt.Fprintf(c.out, "  FAIL  "+format+"\n", args...)
}

func (c *checker) note(format string, args ...any) {
	fmt.Fprintf(c.out, "        "+format+"\n", args...)
}

func (c *checker) run(o config.OIDC, username, password string) {
	secret, _ := o.Secret() // validated above
	discoveryURL := o.DiscoveryURL
	if discoveryURL == "" {
		discoveryURL = "the issuer"
	}
	fmt.Fprintf(c.out, "issuer        %s\ndiscovery URL %s\nclient id     %s\nredirect URI  %s\nCA bundles    %s\n\n",
		o.Issuer, discoveryURL, o.ClientID, o.RedirectURI, strings.Join(append([]string{"system roots"}, o.CAFiles()...), ", "))
	p, err := keycloak.New(keycloak.Config{Issuer: o.Issuer, DiscoveryURL: o.DiscoveryURL, Generic: o.Provider == config.ProviderGeneric, RolesClaim: o.RolesClaim, ClientID: o.ClientID, ClientSecret: secret, RedirectURI: o.RedirectURI,
		CAFiles: o.CAFiles(), RoleMap: o.Roles(), Skew: o.ClockSkew}, zap.NewNop())
	if err != nil {
		c.fail("client: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	fmt.Fprintln(c.out, "provider")
	if err := p.Discover(ctx); err != nil {
		if errors.Is(p.Ready(), domain.ErrUnauthenticated) {
			c.fail("TLS trust: the provider's certificate is not trusted")
			c.note("set SERVICE_OIDC_CA_FILE (or NODE_EXTRA_CA_CERTS) to the PEM file of the certificate authority that signed it")
		}
		var mismatch *keycloak.IssuerMismatchError
		if errors.As(err, &mismatch) {
			c.fail("issuer: the provider says %q, the configuration %q", mismatch.Discovered, mismatch.Configured)
			c.note("%v", err)
			return
		}
		c.fail("discovery: %v", err)
		if strings.Contains(err.Error(), "issuer") {
			c.note("the issuer must be exactly what the provider's discovery document says, e.g. https://<host>/realms/<realm> (no trailing slash, no /auth prefix on Keycloak 17+)")
		}
		return
	}
	if o.DiscoveryURL != "" {
		c.pass("TLS trust and discovery: %s/.well-known/openid-configuration names the issuer %s; the service calls the provider at %s, browsers go to %s",
			o.DiscoveryURL, o.Issuer, o.DiscoveryURL, o.Issuer)
	} else {
		c.pass("TLS trust and discovery: %s/.well-known/openid-configuration names the same issuer", o.Issuer)
	}
	c.pass("signature algorithms accepted: %s", strings.Join(p.Algorithms(), ", "))
	c.pass("JWKS: %d key(s): %s", len(p.KeyIDs()), strings.Join(p.KeyIDs(), ", "))
	if _, err := p.Introspect(ctx, "agentauth-oidc-check"); err != nil {
		c.fail("client credentials: introspection with client %q was refused: %v", o.ClientID, err)
		c.note("check SERVICE_OIDC_CLIENT_ID and the client secret (Clients > %s > Credentials); client authentication must be ON", o.ClientID)
	} else {
		c.pass("client credentials: the provider accepts client %q and its secret", o.ClientID)
	}
	if username == "" {
		fmt.Fprintln(c.out, "\n(add --username U for a test login that explains the roles)")
		return
	}

	fmt.Fprintf(c.out, "\ntest login as %q (password grant, scope=openid)\n", username)
	ts, err := p.PasswordGrant(ctx, username, password)
	if err != nil {
		c.fail("login: %v", err)
		c.note("wrong credentials, Direct Access Grants OFF on the client, or the user is disabled")
		return
	}
	defer func() { _ = p.Logout(ctx, ts.RefreshToken) }()
	c.pass("tokens verified (signature, iss, aud/azp, exp, nbf, iat, typ); subject %s", ts.Subject)
	idClaims, accessClaims := payload(ts.IDToken), payload(ts.AccessToken)
	roles := o.Roles()
	idEx := domain.ExtractRoles(idClaims, nil, o.ClientID, roles)
	atEx := domain.ExtractRoles(nil, accessClaims, o.ClientID, roles)
	c.explain(domain.TokenID, ts.IDToken, idEx)
	c.explain(domain.TokenAccess, ts.AccessToken, atEx)
	final := ts.Roles
	fmt.Fprintf(c.out, "\nrole granted: %s (from %s)\n", roleList(final.Roles), final.Source)
	switch {
	case final.Source == "default" && len(atEx.Findings) == 0 && len(idEx.Findings) == 0:
		c.note("no role claim in either token: add the realm and client role mappers (claims realm_access.roles, resource_access.%s.roles) with access.token.claim and id.token.claim on", o.ClientID)
	case final.Source == domain.TokenAccess:
		c.note("the id_token carries no roles, so the access_token's were used; to put them in the id_token turn on \"Add to ID token\" (id.token.claim) on the role mappers")
	case final.Source == "default":
		c.note("no known role name: realm roles must be named admin, user, lead or auditor (or map yours with auth.oidc.roleMap)")
	}
	for _, ig := range append(idEx.Ignored, atEx.Ignored...) {
		// resource_access.account is Keycloak's own account client, always there.
		if strings.Contains(ig, "not our client id") && !strings.Contains(ig, "resource_access.account:") {
			c.note("client roles under another client id were ignored (%s): client roles count only under resource_access.%s", ig, o.ClientID)
			break
		}
	}
}

func (c *checker) explain(token, raw string, ex domain.RoleExtraction) {
	fmt.Fprintf(c.out, "\n%s (%d bytes)\n", token, len(raw))
	if len(raw) > largeToken {
		c.note("large token: proxies and load balancers in front of the service may need bigger header buffers (the service accepts 32 KiB of headers)")
	}
	if len(ex.Findings) == 0 {
		c.note("no roles in realm_access.roles or resource_access.<clientId>.roles")
	}
	for _, f := range ex.Findings {
		if f.Role != "" {
			fmt.Fprintf(c.out, "  kept     %-28s %q -> %s\n", f.Claim, f.Name, f.Role)
		} else {
			fmt.Fprintf(c.out, "  dropped  %-28s %q: %s\n", f.Claim, f.Name, f.Dropped)
		}
	}
	for _, ig := range ex.Ignored {
		fmt.Fprintf(c.out, "  ignored  %s\n", ig)
	}
}

func roleList(rs []domain.Role) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}

// payload decodes a verified JWT's claims for display.
func payload(token string) domain.Claims {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil
	}
	var c domain.Claims
	if json.Unmarshal(b, &c) != nil {
		return nil
	}
	return c
}

// osStdin is the input oidc check reads a password from.
var osStdin io.Reader = os.Stdin
