package rest

import (
	"fmt"
	"strings"

	"github.com/gofiber/fiber/v2"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// credentialFrom reads the Bearer token, or else the session cookie
// (RFC 6750 §2.1): one Authorization header, the scheme, one or more ASCII
// spaces or tabs, a b64token. Two headers or a credential of other
// characters is a malformed request (errMalformedAuthorization); another
// scheme, no scheme or no credential after it is a credential present but
// unusable: 401, with a message saying which (errNoBearerScheme,
// errOtherScheme, errNoBearerCredential).
func credentialFrom(c *fiber.Ctx) (ports.Credential, error) {
	if n := len(c.Request().Header.PeekAll(fiber.HeaderAuthorization)); n > 1 {
		return ports.Credential{}, fmt.Errorf("%d Authorization headers: %w", n, errMalformedAuthorization)
	}
	if h := c.Get(fiber.HeaderAuthorization); h != "" {
		i := strings.IndexAny(h, " \t")
		switch {
		case i < 0 && strings.EqualFold(h, "Bearer"):
			return ports.Credential{}, fmt.Errorf("%w: %w", domain.ErrUnauthenticated, errNoBearerCredential)
		case i < 0:
			return ports.Credential{}, fmt.Errorf("%w: %w", domain.ErrUnauthenticated, errNoBearerScheme)
		case !strings.EqualFold(h[:i], "Bearer"):
			return ports.Credential{}, fmt.Errorf("%w: %w", domain.ErrUnauthenticated, errOtherScheme)
		}
		v := strings.Trim(h[i:], " \t")
		if v == "" {
			return ports.Credential{}, fmt.Errorf("%w: %w", domain.ErrUnauthenticated, errNoBearerCredential)
		}
		if !domain.IsBearerToken(v) {
			return ports.Credential{}, fmt.Errorf("the Bearer credential has characters outside RFC 6750's b64token syntax: %w", errMalformedAuthorization)
		}
		return ports.Credential{Kind: ports.CredentialBearer, Value: v}, nil
	}
	if v := c.Cookies(SessionCookie); v != "" {
		return ports.Credential{Kind: ports.CredentialCookie, Value: v}, nil
	}
	return ports.Credential{}, nil
}

// authenticate resolves the caller or stops the request with 401 (503 when
// the identity source cannot answer).
func (s *Server) authenticate(c *fiber.Ctx) error {
	cred, err := credentialFrom(c)
	if err != nil {
		return err
	}
	switch {
	case cred.Kind == ports.CredentialNone:
		return fmt.Errorf("%w: %w", domain.ErrUnauthenticated, errMissingCredential)
	}
	if s.isAgentToken(cred) {
		return s.authenticateAgent(c, cred.Value)
	}
	if s.isManagedKey(cred) {
		return s.authenticateKey(c, cred.Value)
	}
	p, err := s.uc.Authenticator.Authenticate(c.UserContext(), cred)
	if err != nil {
		return err
	}
	if p.Method == domain.MethodDebug {
		if !s.loopbackOnly.Load() {
			s.log.Error("refused a debug principal on a non-loopback address; the identity source (a hybrid centre?) runs in debug mode",
				zap.String("request_id", stateOf(c).id), zap.String("listen", s.cfg.Addr))
			return errDebugOffLoopback
		}
		c.Set("X-Auth-Debug", "true")
	}
	if cred.Kind == ports.CredentialCookie && s.cfg.Login == nil {
		// OIDC mode checks cookie requests in Login.csrf; elsewhere (hybrid
		// mode forwards the centre's cookie) the check is made here, once
		// the cookie is known to be a credential (an unknown one stays 401).
		if err := sameOriginCookieRequest(c); err != nil {
			return err
		}
	}
	st := stateOf(c)
	st.principal, st.authenticated = p, true
	st.intent.Subject, st.intent.Roles, st.intent.AuthMethod = p.Subject, p.Roles, p.Method
	if err := s.observeOwner(c, p); err != nil {
		return err
	}
	return c.Next()
}
