package wire

// Key sign-in: in local, API-key and debug modes a browser exchanges an
// API key for a user_session cookie session (the console's sign-in), kept
// by the same login use case and stores as OIDC logins.

import (
	"net"

	gwire "github.com/google/wire"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/identity/apikey"
	"github.com/agentauth/agentauth/adapters/rest"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/config"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// keyCoreSet is coreSet with key sign-in: the mode's ring (its
// constructor comes with the injector) checks Bearer keys and the keys
// exchanged for sessions, and the cookie goes to the login sessions.
var keyCoreSet = gwire.NewSet(
	coreSet, keyRestConfig,
	gwire.FieldsOf(new(Stores), "LoginSessions", "LoginThrottle", "LoginWatch"),
	withRoleKeys, keyLoginConfig, newKeyLogin, keyAuthenticator, newKeyLoginEdge,
)

// modeKeys is the mode's ring extended with the configured role keys.
type modeKeys struct{ ports.Authenticator }

func withRoleKeys(base *apikey.Keyring, extra apikey.RoleKeys) modeKeys {
	return modeKeys{apikey.WithRoleKeys(base, extra)}
}

// keyLoginConfig takes the session limits of auth.oidc (idle, absolute
// end, failed attempts per window), and names the mode's method so that a
// debug session stays a debug principal.
func keyLoginConfig(cfg config.Config) app.LoginConfig {
	o := cfg.Auth.OIDC
	method := map[config.Mode]domain.AuthMethod{config.ModeLocal: domain.MethodLocal, config.ModeAPIKey: domain.MethodAPIKey,
		config.ModeDebug: domain.MethodDebug}[cfg.Mode()]
	return app.LoginConfig{SessionIdle: o.SessionIdle, SessionMax: o.SessionMax, RefreshBefore: o.RefreshBefore,
		LoginFailures: o.LoginFailures, LoginWindow: o.LoginWindow, Method: method}
}

func newKeyLogin(cfg app.LoginConfig, keys modeKeys, sessions ports.LoginSessionStore, throttle ports.LoginThrottle, clock ports.Clock,
	watch ports.LoginSessionWatcher) (*app.Login, func(), error) {
	l, err := app.NewKeyLogin(cfg, keys.Authenticator, sessions, throttle, clock)
	if err != nil {
		return nil, nil, err
	}
	return l, l.KeepSessionsInMemory(watch), nil
}

// keyAuthenticator routes the cookie to the login sessions and a Bearer
// credential to the ring.
func keyAuthenticator(keys modeKeys, login *app.Login) ports.Authenticator {
	return &app.Credentials{Login: login, Keys: keys.Authenticator}
}

// newKeyLoginEdge builds the key sign-in endpoints; the cookie is Secure
// unless the service listens on loopback (plain http there).
func newKeyLoginEdge(cfg config.Config, uc *app.Login, log *zap.Logger) (*rest.Login, func()) {
	host, _, err := net.SplitHostPort(cfg.Addr())
	secure := err != nil || !isLoopback(host)
	return rest.NewKeyLogin(rest.KeyLoginConfig{Secure: secure, BasePath: cfg.Server.BasePath}, log), sweepLoginSessions(uc, log)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func keyRestConfig(cfg config.Config, login *rest.Login, tokens *rest.AgentTokens,
	gateway *rest.Gateway, ready rest.ReadyChecks, redactor *domain.TargetRedactor) (rest.Config, error) {
	c, err := restConfig(cfg, tokens, gateway, ready, redactor)
	c.Login = login
	return c, err
}
