package wire

// OIDC mode: the Keycloak provider, the login use case over the login
// stores, the Bearer/cookie/API-key authenticator and the login endpoints.

import (
	"context"
	"crypto/hkdf"
	"crypto/sha256"
	"time"

	gwire "github.com/google/wire"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/identity/apikey"
	"github.com/agentauth/agentauth/adapters/identity/keycloak"
	"github.com/agentauth/agentauth/adapters/rest"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/config"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// oidcSet is coreSet with the login endpoints in the edge's configuration,
// plus everything OIDC mode needs.
var oidcSet = gwire.NewSet(
	coreSet, oidcRestConfig,
	KeycloakConfig, keycloak.Set, gwire.Bind(new(rest.HealthChecker), new(*keycloak.Provider)),
	// The login ports come from the same store as every other port (see
	// store.go): on PostgreSQL, sessions and login limits hold across instances.
	loginConfig, newLogin, loginStoreFields,
	restLoginConfig, newLoginEdge, oidcAuthenticator,
)

// KeycloakConfig is the identity adapter's configuration from auth.oidc
// (and the gateway's resource URL): the one mapping, used by the service
// and by agentauth oidc check, so that the check sees what the service does.
func KeycloakConfig(cfg config.Config) (keycloak.Config, error) {
	o := cfg.Auth.OIDC
	secret, err := o.Secret()
	if err != nil {
		return keycloak.Config{}, err
	}
	var extra []keycloak.Trusted
	for _, a := range o.AdditionalIssuers {
		t := keycloak.Trusted{Issuer: a.Issuer, DiscoveryURL: a.DiscoveryURL, ClientID: a.ClientID}
		if a.CAFile != "" {
			t.CAFiles = []string{a.CAFile}
		}
		extra = append(extra, t)
	}
	return keycloak.Config{
		Additional:       extra,
		Generic:          o.Provider == config.ProviderGeneric,
		RolesClaim:       o.RolesClaim,
		Audience:         o.Audience,
		SubjectClaim:     o.SubjectClaim,
		IntrospectionURL: o.IntrospectionURL,
		Scopes:           o.Scopes,
		Issuer:           o.Issuer,
		DiscoveryURL:     o.DiscoveryURL,
		ClientID:         o.ClientID,
		ClientSecret:     secret,
		RedirectURI:      o.RedirectURI,
		CAFiles:          o.CAFiles(),
		RoleMap:          o.Roles(),
		KeyRefetch:       o.JWKSRefetch,
		Skew:             o.ClockSkew,
		HTTPTimeout:      o.HTTPTimeout,
		CacheSize:        o.TokenCacheSize,

		// A token for a gateway resource only opens that resource.
		GatewayResourceBase: cfg.GatewayResourceURL(),
	}, nil
}

// loginConfig derives the key that seals tokens in the session store from
// the client secret: rotating the secret ends every session, which is what
// a rotation after a leak should do anyway.
func loginConfig(cfg config.Config) (app.LoginConfig, error) {
	o := cfg.Auth.OIDC
	secret, err := o.Secret()
	if err != nil {
		return app.LoginConfig{}, err
	}
	key, err := hkdf.Key(sha256.New, []byte(secret), nil, "agentauth login-session tokens v1", 32)
	if err != nil {
		return app.LoginConfig{}, err
	}
	return app.LoginConfig{
		TokenKey:      key,
		PasswordLogin: o.PasswordLoginEnabled(),
		SessionIdle:   o.SessionIdle,
		SessionMax:    o.SessionMax,
		RefreshBefore: o.RefreshBefore,
		LoginFailures: o.LoginFailures,
		LoginWindow:   o.LoginWindow,
	}, nil
}

// newLogin is the login use case with cookie sessions kept in memory after
// their first use, forgotten on every instance when any instance changes
// or ends them (on PostgreSQL by LISTEN/NOTIFY); a back-channel logout
// naming a subject suspends its managed keys too, where subjects are subs.
func newLogin(settings config.Config, cfg app.LoginConfig, idp ports.IdentityProvider, sessions ports.LoginSessionStore, requests ports.AuthRequestStore,
	throttle ports.LoginThrottle, clock ports.Clock, watch ports.LoginSessionWatcher, keys *app.APIKeys) (*app.Login, func(), error) {
	l, err := app.NewLogin(cfg, idp, sessions, requests, throttle, clock)
	if err != nil {
		return nil, nil, err
	}
	if logoutSubjectsAreOwners(settings) {
		l.SuspendKeysOnLogout(keys)
	}
	return l, l.KeepSessionsInMemory(watch), nil
}

func restLoginConfig(cfg config.Config) rest.LoginConfig {
	return rest.LoginConfig{RedirectURI: cfg.Auth.OIDC.RedirectURI, BasePath: cfg.Server.BasePath}
}

func oidcRestConfig(cfg config.Config, login *rest.Login, tokens *rest.AgentTokens,
	gateway *rest.Gateway, ready rest.ReadyChecks, redactor *domain.TargetRedactor) (rest.Config, error) {
	c, err := restConfig(cfg, tokens, gateway, ready, redactor)
	c.Login = login
	return c, err
}

// sweepEvery is how often expired login sessions are deleted.
const sweepEvery = 10 * time.Minute

// newLoginEdge builds the login endpoints and starts the sweep of expired
// sessions; the cleanup stops it.
func newLoginEdge(cfg rest.LoginConfig, uc *app.Login, health rest.HealthChecker, log *zap.Logger) (*rest.Login, func(), error) {
	l, err := rest.NewLogin(cfg, health, log)
	if err != nil {
		return nil, nil, err
	}
	return l, sweepLoginSessions(uc, log), nil
}

// sweepLoginSessions deletes expired login sessions every sweepEvery
// until the returned cleanup stops it.
func sweepLoginSessions(uc *app.Login, log *zap.Logger) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(sweepEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if n, err := uc.Sweep(ctx); err != nil {
					log.Warn("sweep of expired login sessions failed", zap.Error(err))
				} else if n > 0 {
					log.Debug("expired login sessions deleted", zap.Int("count", n))
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

// oidcAuthenticator accepts the user_session cookie and Bearer access
// tokens, and SERVICE_API_KEY too when it is set (automation, scrapers).
func oidcAuthenticator(key apikey.Key, login *app.Login, bearer *keycloak.Authenticator) (ports.Authenticator, error) {
	c := &app.Credentials{Login: login, Tokens: bearer}
	if key != "" {
		ring, err := apikey.New(key)
		if err != nil {
			return nil, err
		}
		c.Keys = ring
	}
	return c, nil
}

// logoutSubjectsAreOwners reports whether the sub a back-channel logout
// token names is a principal's subject, and so the owner of its managed
// keys: not when auth.oidc.subjectClaim reads subjects from another claim
// (a logout then ends sessions by sid only, and suspends no key).
func logoutSubjectsAreOwners(cfg config.Config) bool {
	c := cfg.Auth.OIDC.SubjectClaim
	return c == "" || c == "sub"
}
