package main

// agentauth oidc check: the answer to the specification's troubleshooting
// notes. It checks discovery, TLS trust, the JWKS and the client
// credentials, and for a test login prints which roles were found in which
// token, which were dropped and why, and the role the service grants.

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/identity/keycloak"
	"github.com/agentauth/agentauth/config"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
	"github.com/agentauth/agentauth/wire"
)

const oidcUsage = `Usage:
  agentauth oidc check [--config FILE] [--username U | --token]

Checks the OIDC settings (SERVICE_OIDC_*) against the provider: discovery,
TLS trust, JWKS, client credentials, what the provider offers (grants,
introspection, userinfo, end session), and the claim roles are read from:
with --username a test login (password grant, where the provider offers
it), with --token an access token a client of the provider holds, each
showing the role names found and the role granted. The password is read
from AGENTAUTH_CHECK_PASSWORD, the token from AGENTAUTH_CHECK_TOKEN, else
either from the first line of standard input; never a flag (flags show in
ps).
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
	token := fs.Bool("token", false, "explain the roles of an access token (AGENTAUTH_CHECK_TOKEN or standard input)")
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
	if *username != "" && *token {
		fmt.Fprintln(stderr, "agentauth: --username and --token: give one of them")
		return exitUsage
	}
	secret := ""
	switch {
	case *username != "":
		if secret = secretInput(env["AGENTAUTH_CHECK_PASSWORD"], stdin); secret == "" {
			fmt.Fprintln(stderr, "agentauth: --username needs the password in AGENTAUTH_CHECK_PASSWORD or on standard input")
			return exitUsage
		}
	case *token:
		if secret = secretInput(env["AGENTAUTH_CHECK_TOKEN"], stdin); secret == "" {
			fmt.Fprintln(stderr, "agentauth: --token needs the access token in AGENTAUTH_CHECK_TOKEN or on standard input")
			return exitUsage
		}
	}
	c := &checker{out: stdout, ok: true}
	c.run(cfg, *username, *token, secret)
	if !c.ok {
		return exitFailure
	}
	return exitOK
}

// secretInput is fromEnv, else the first line of stdin ("" when none).
func secretInput(fromEnv string, stdin io.Reader) string {
	if fromEnv != "" {
		return fromEnv
	}
	line, _ := bufio.NewReader(stdin).ReadString('\n')
	return strings.TrimRight(line, "\r\n")
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

// info reports a fact about the provider: neither a pass nor a failure.
func (c *checker) info(format string, args ...any) {
	fmt.Fprintf(c.out, "  info  "+format+"\n", args...)
}

func (c *checker) note(format string, args ...any) {
	fmt.Fprintf(c.out, "        "+format+"\n", args...)
}

func (c *checker) run(cfg config.Config, username string, token bool, secret string) {
	o := cfg.Auth.OIDC
	discoveryURL := o.DiscoveryURL
	if discoveryURL == "" {
		discoveryURL = "the issuer"
	}
	generic := o.Provider == config.ProviderGeneric
	kc, err := wire.KeycloakConfig(cfg)
	if err != nil {
		c.fail("client: %v", err)
		return
	}
	p, err := keycloak.New(kc, zap.NewNop())
	if err != nil {
		c.fail("client: %v", err)
		return
	}
	fmt.Fprintf(c.out, "issuer        %s\ndiscovery URL %s\nclient id     %s\nredirect URI  %s\nCA bundles    %s\nroles claim   %s\n\n",
		o.Issuer, discoveryURL, o.ClientID, o.RedirectURI, strings.Join(append([]string{"system roots"}, o.CAFiles()...), ", "), rolesClaimLabel(o, p))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	fmt.Fprintln(c.out, "provider")
	if !c.discover(ctx, p, o) {
		return
	}
	facts := p.Facts()
	c.clientCredentials(ctx, p, o, facts)
	c.facts(facts, generic)
	switch {
	case token:
		c.token(ctx, p, o, secret)
	case username != "" && !facts.PasswordGrant:
		fmt.Fprintf(c.out, "\ntest login as %q\n", username)
		c.note("not possible: the provider does not offer the password grant; check an access token of the user instead:")
		c.note("AGENTAUTH_CHECK_TOKEN=<access token> agentauth oidc check --token")
	case username != "":
		c.login(ctx, p, o, username, secret, generic)
	default:
		fmt.Fprintln(c.out, "\n(add --username U for a test login, or --token for an access token, to see the roles found)")
	}
}

func rolesClaimLabel(o config.OIDC, p *keycloak.Provider) string {
	if o.RolesClaim != "" {
		return o.RolesClaim + " (auth.oidc.rolesClaim)"
	}
	return p.RolesClaim() + " (Keycloak's; auth.oidc.rolesClaim names another claim)"
}

// discover checks TLS trust, discovery and the keys.
func (c *checker) discover(ctx context.Context, p *keycloak.Provider, o config.OIDC) bool {
	if err := p.Discover(ctx); err != nil {
		if errors.Is(p.Ready(), domain.ErrUnauthenticated) {
			c.fail("TLS trust: the provider's certificate is not trusted")
			c.note("set SERVICE_OIDC_CA_FILE (or NODE_EXTRA_CA_CERTS) to the PEM file of the certificate authority that signed it")
		}
		var mismatch *keycloak.IssuerMismatchError
		if errors.As(err, &mismatch) {
			c.fail("issuer: the provider says %q, the configuration %q", mismatch.Discovered, mismatch.Configured)
			c.note("%v", err)
			return false
		}
		c.fail("discovery: %v", err)
		if strings.Contains(err.Error(), "issuer") {
			c.note("the issuer must be exactly what the provider's discovery document says, a trailing / included or not " +
				"(Keycloak: https://<host>/realms/<realm>, no /auth prefix on Keycloak 17+)")
		}
		return false
	}
	if o.DiscoveryURL != "" {
		c.pass("TLS trust and discovery: %s/.well-known/openid-configuration names the issuer %s; the service calls the provider at %s, browsers go to %s",
			strings.TrimSuffix(o.DiscoveryURL, "/"), o.Issuer, o.DiscoveryURL, o.Issuer)
	} else {
		c.pass("TLS trust and discovery: %s/.well-known/openid-configuration names the same issuer", strings.TrimSuffix(o.Issuer, "/"))
	}
	c.pass("signature algorithms accepted: %s", strings.Join(p.Algorithms(), ", "))
	c.pass("JWKS: %d key(s): %s", len(p.KeyIDs()), strings.Join(p.KeyIDs(), ", "))
	return true
}

// clientCredentials checks the client secret where the provider offers
// a call that needs nothing else (introspection).
func (c *checker) clientCredentials(ctx context.Context, p *keycloak.Provider, o config.OIDC, f keycloak.Facts) {
	if f.Introspection == "" {
		c.info("client credentials: not checked (the provider advertises no introspection endpoint); a test login or a browser login checks them")
		return
	}
	_, err := p.Introspect(ctx, "agentauth-oidc-check")
	switch {
	case err == nil:
		c.pass("client credentials: the provider accepts client %q and its secret", o.ClientID)
	case errors.Is(err, keycloak.ErrClientRefused):
		c.fail("client credentials: the provider refused client %q: %v", o.ClientID, err)
		if o.Provider == config.ProviderGeneric {
			c.note("check SERVICE_OIDC_CLIENT_ID and the client secret at the provider (a confidential client)")
		} else {
			c.note("check SERVICE_OIDC_CLIENT_ID and the client secret (Clients > %s > Credentials); client authentication must be ON", o.ClientID)
		}
	default:
		c.info("client credentials: not confirmed: introspection answered: %v", err)
	}
}

// facts reports what the provider offers.
func (c *checker) facts(f keycloak.Facts, generic bool) {
	if f.Grants != nil {
		c.info("grants offered: %s", strings.Join(f.Grants, ", "))
	} else {
		c.info("grants offered: not said by the discovery document")
	}
	if f.PasswordGrant {
		c.info("password grant: offered (POST /auth/login, when auth.oidc.passwordLogin is on)")
	} else {
		c.info("password grant: not offered: POST /auth/login answers 404; set auth.oidc.passwordLogin: false, users sign in at GET /auth/login")
	}
	opaque := "opaque Bearer tokens are accepted through it"
	if !generic {
		opaque = "used by this check only"
	}
	for _, e := range []struct{ name, url, without string }{
		{"introspection", f.Introspection, "not advertised: only JWT access tokens are accepted as Bearer tokens"},
		{"userinfo", f.Userinfo, "not advertised: roles come from the id token or a JWT access token"},
		{"end session", f.EndSession, "not advertised: logout ends the agentauth session and revokes the refresh token where the provider can"},
		{"revocation", f.Revocation, "not advertised"},
	} {
		switch {
		case e.url == "":
			c.info("%s: %s", e.name, e.without)
		case e.name == "introspection":
			c.info("%s: %s (%s)", e.name, e.url, opaque)
		default:
			c.info("%s: %s", e.name, e.url)
		}
	}
	c.info("scopes asked at login: %s (auth.oidc.scopes)", strings.Join(f.Scopes, " "))
	if !slices.Contains(f.Scopes, "offline_access") && generic {
		c.note("without offline_access most providers issue no refresh token: a session then ends when its access token expires")
	}
}

// login is the password-grant test login.
func (c *checker) login(ctx context.Context, p *keycloak.Provider, o config.OIDC, username, password string, generic bool) {
	fmt.Fprintf(c.out, "\ntest login as %q (password grant, scope=openid)\n", username)
	ts, err := p.PasswordGrant(ctx, username, password)
	if err != nil {
		c.fail("login: %v", err)
		if generic {
			c.note("wrong credentials, the password grant not allowed for the client, or the user is disabled")
		} else {
			c.note("wrong credentials, Direct Access Grants OFF on the client, or the user is disabled")
		}
		return
	}
	defer func() { _ = p.Logout(ctx, ts.RefreshToken) }()
	c.pass("tokens verified (signature, iss, aud/azp, exp, nbf, iat, typ); subject %s", ts.Subject)
	sources, err := p.RoleSources(ctx, ts)
	if err != nil {
		c.fail("userinfo: %v", err)
		return
	}
	var findings int
	var ignored []string
	for _, src := range sources {
		raw := map[string]string{domain.TokenID: ts.IDToken, domain.TokenAccess: ts.AccessToken}[src.Token]
		ex := c.explain(o, src, raw)
		findings += len(ex.Findings)
		ignored = append(ignored, ex.Ignored...)
	}
	final := ts.Roles
	fmt.Fprintf(c.out, "\nrole granted: %s (from %s)\n", roleList(final.Roles), final.Source)
	switch {
	case final.Source == "default" && findings == 0 && !generic && o.RolesClaim == "":
		c.note("no role claim in either token: add the realm and client role mappers (claims realm_access.roles, resource_access.%s.roles) with access.token.claim and id.token.claim on", o.ClientID)
	case final.Source == "default" && findings == 0:
		c.note("no role names at %s: set auth.oidc.rolesClaim to the claim the provider puts roles in (a dotted path such as groups or ext.roles)", p.RolesClaim())
	case final.Source == domain.TokenAccess && !generic:
		c.note("the id_token carries no roles, so the access_token's were used; to put them in the id_token turn on \"Add to ID token\" (id.token.claim) on the role mappers")
	case final.Source == "default":
		c.note("no known role name: role names must be admin, user, lead or auditor (or map yours with auth.oidc.roleMap)")
	}
	for _, ig := range ignored {
		// resource_access.account is Keycloak's own account client, always there.
		if strings.Contains(ig, "not our client id") && !strings.Contains(ig, "resource_access.account:") {
			c.note("client roles under another client id were ignored (%s): client roles count only under resource_access.%s", ig, o.ClientID)
			break
		}
	}
}

// token checks an access token as the service would and explains its roles.
func (c *checker) token(ctx context.Context, p *keycloak.Provider, o config.OIDC, raw string) {
	fmt.Fprintln(c.out, "\naccess token")
	pr, err := keycloak.NewAuthenticator(p).Authenticate(ctx, ports.Credential{Kind: ports.CredentialBearer, Value: raw})
	if err != nil {
		c.fail("token: refused: %v", err)
		return
	}
	c.pass("token accepted as a Bearer token; subject %s", pr.Subject)
	src, err := p.TokenClaims(ctx, raw)
	if err != nil {
		c.fail("token claims: %v", err)
		return
	}
	fmt.Fprintf(c.out, "\n%s\n", src.Token)
	c.printFindings(domain.ExtractRolesFrom([]domain.ClaimSource{src}, o.RolesClaim, o.ClientID, o.Roles()), o.RolesClaim, o.ClientID)
	fmt.Fprintf(c.out, "\nrole granted: %s (from %s)\n", roleList(pr.Roles), pr.RoleSource)
}

// explain prints the role names found in one source.
func (c *checker) explain(o config.OIDC, src domain.ClaimSource, raw string) domain.RoleExtraction {
	if raw != "" {
		fmt.Fprintf(c.out, "\n%s (%d bytes)\n", src.Token, len(raw))
		if len(raw) > largeToken {
			c.note("large token: proxies and load balancers in front of the service may need bigger header buffers (the service accepts 32 KiB of headers)")
		}
	} else {
		fmt.Fprintf(c.out, "\n%s\n", src.Token)
	}
	if src.Claims == nil {
		c.note("none (not a JWT, or not asked)")
		return domain.RoleExtraction{}
	}
	ex := domain.ExtractRolesFrom([]domain.ClaimSource{src}, o.RolesClaim, o.ClientID, o.Roles())
	c.printFindings(ex, o.RolesClaim, o.ClientID)
	return ex
}

// printFindings lists what an extraction kept, dropped and ignored.
func (c *checker) printFindings(ex domain.RoleExtraction, rolesClaim, clientID string) {
	if len(ex.Findings) == 0 {
		where := rolesClaim
		if where == "" {
			where = "realm_access.roles or resource_access." + clientID + ".roles"
		}
		c.note("no role names at %s", where)
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

// osStdin is the input oidc check reads a password from.
var osStdin io.Reader = os.Stdin
