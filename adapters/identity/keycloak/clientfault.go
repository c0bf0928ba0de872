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

// clientFaultCodes are OAuth error codes (RFC 6749 §5.2) that blame the
// client, that is this service's configuration, never the user: a wrong
// secret or client id, a grant or scope the client may not use.
var clientFaultCodes = []string{"invalid_client", "unauthorized_client", "unsupported_grant_type", "invalid_scope"}

// oauthErrorCode is the provider's OAuth error code in err, if any.
// gocloak keeps it only in its message ("401 Unauthorized: invalid_client:
// description").
func oauthErrorCode(err error) string {
	var re *oauth2.RetrieveError
	var ae *gocloak.APIError
	switch {
	case errors.As(err, &re):
		return re.ErrorCode
	case errors.As(err, &ae):
		_, rest, ok := strings.Cut(ae.Message, ": ")
		if !ok {
			return ""
		}
		code, _, _ := strings.Cut(rest, ":")
		return strings.TrimSpace(code)
	}
	return ""
}

// clientFault is a provider refusal that blames this service's client.
func clientFault(err error) (string, bool) {
	code := oauthErrorCode(err)
	for _, c := range clientFaultCodes {
		if code == c {
			return code, true
		}
	}
	return "", false
}

// clientRefused records that the provider refused the client (readiness
// reports it, see Checks), logs it once per call at error level and
// returns a 503: the operator must act, and the user is not to blame.
func (p *Provider) clientRefused(op, code string) error {
	msg := fmt.Sprintf("the identity provider refused this service's client (%s) at %s: check %s", code, op, clientSetting)
	p.clientErr.Store(&msg)
	p.log.Error("identity provider refused this service's client credentials; fix the configuration",
		zap.String("op", op), zap.String("oauth_error", code), zap.String("setting", clientSetting))
	return &serviceFault{err: fmt.Errorf("keycloak: %s: %w", msg, domain.ErrUnavailable)}
}

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
