package keycloak

import (
	"errors"
	"fmt"
	"strings"

	"github.com/Nerzal/gocloak/v13"
	"go.uber.org/zap"
	"golang.org/x/oauth2"

	"github.com/agentauth/agentauth/domain"
)

// clientSetting names what to fix when the provider refuses this service's
// own client.
const clientSetting = "SERVICE_OIDC_CLIENT_SECRET / auth.oidc.clientSecretFile (and SERVICE_OIDC_CLIENT_ID)"

// oauthErrorCode is the provider's OAuth error code in err, if any, and
// the HTTP status of the answer (0 when unknown). gocloak keeps the code
// only in its message ("401 Unauthorized: invalid_client: description").
func oauthErrorCode(err error) (string, int) {
	var re *oauth2.RetrieveError
	var ae *gocloak.APIError
	switch {
	case errors.As(err, &re):
		status := 0
		if re.Response != nil {
			status = re.Response.StatusCode
		}
		return re.ErrorCode, status
	case errors.As(err, &ae):
		_, rest, ok := strings.Cut(ae.Message, ": ")
		if !ok {
			return "", ae.Code
		}
		code, _, _ := strings.Cut(rest, ":")
		return strings.TrimSpace(code), ae.Code
	}
	return "", 0
}

// Kinds of provider refusal (RFC 6749 section 5.2) besides the user's own
// (invalid_grant: a wrong password, a used code, an ended session).
const (
	faultNone = iota
	// faultCredentials: the provider does not accept this service's client
	// credentials: invalid_client, or unauthorized_client answered 401,
	// Keycloak's answer to a wrong secret.
	faultCredentials
	// faultConfig: the client is known but the request is not one the
	// provider serves it: a grant it does not offer or allow, a scope, a
	// request it calls malformed.
	faultConfig
)

func faultOf(code string, status int) int {
	switch {
	case code == "invalid_client", code == "unauthorized_client" && status == 401:
		return faultCredentials
	case code == "unauthorized_client", code == "unsupported_grant_type", code == "invalid_request", code == "invalid_scope":
		return faultConfig
	}
	return faultNone
}

// configSetting names what to look at when the provider refuses a request
// of op with code.
func configSetting(op, code string) string {
	switch {
	case code == "invalid_scope":
		return "auth.oidc.scopes / SERVICE_OIDC_SCOPES (the scopes the client may ask for at the provider)"
	case strings.HasPrefix(op, "password"):
		return "auth.oidc.passwordLogin / SERVICE_OIDC_PASSWORD_LOGIN (set it to false, or allow the password grant for the client at the provider)"
	}
	return "the client's grants at the provider (authorization code and refresh token)"
}

// configFault logs, once per call at error level, a request the provider
// refuses for this service's configuration, and returns a 503: the
// operator must act and the user is not to blame. Readiness is not
// affected: other requests may well work.
func (p *Provider) configFault(op, code string) error {
	setting := configSetting(op, code)
	p.log.Error("the identity provider refused a request of this service; fix the configuration",
		zap.String("op", op), zap.String("oauth_error", code), zap.String("setting", setting))
	return &serviceFault{err: fmt.Errorf("keycloak: %s: the identity provider answered %s: check %s: %w", op, code, setting, domain.ErrUnavailable)}
}

// clientRefused records that the provider refused the client (readiness
// reports it, see Checks), logs it once per call at error level and
// returns a 503: the operator must act, and the user is not to blame.
func (p *Provider) clientRefused(op, code string) error {
	msg := fmt.Sprintf("the identity provider refused this service's client (%s) at %s: check %s", code, op, clientSetting)
	p.clientErr.Store(&msg)
	p.log.Error("identity provider refused this service's client credentials; fix the configuration",
		zap.String("op", op), zap.String("oauth_error", code), zap.String("setting", clientSetting))
	return &serviceFault{err: fmt.Errorf("keycloak: %s: %w: %w", msg, ErrClientRefused, domain.ErrUnavailable)}
}

// ErrClientRefused marks a provider answer refusing this service's client
// credentials (invalid_client).
var ErrClientRefused = errors.New("client credentials refused")

// clientAccepted clears a recorded client refusal: the provider has just
// authenticated the client (the call succeeded or failed for another
// reason than the client).
func (p *Provider) clientAccepted() {
	if p.clientErr.Load() != nil {
		p.clientErr.Store(nil)
	}
}

// serviceFault is a 503 whose message tells the caller the fault is the
// service's, without the details (they are in the log).
type serviceFault struct{ err error }

func (e *serviceFault) Error() string { return e.err.Error() }
func (e *serviceFault) Unwrap() error { return e.err }
func (e *serviceFault) ClientMessage() string {
	return "login is unavailable: the identity provider refused this service's configuration; the operator has been told (server log)"
}
