package rest

import (
	"errors"
	"fmt"
	"mime"
	"net/url"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/agentauth/agentauth/domain"
)

// The /oauth2/* endpoints speak OAuth 2.0 as client libraries expect it:
// parameters in an application/x-www-form-urlencoded body only (RFC 6749
// §3.2; a credential in a URL ends up in logs and histories, RFC 6750
// §5.3), each at most once, and errors as RFC 6749 §5.2 has them:
// {"error": code, "error_description": text}, with agentauth's reason_code
// and request_id as extension members.
const oauthPrefix = "/oauth2/"

// RFC 6749 §5.2, RFC 8693 §2.2.2 and RFC 8707 §2 error codes, and the two
// of RFC 6749 §4.1.2.1 a client reads for a server that cannot answer now.
const (
	oauthInvalidRequest         = "invalid_request"
	oauthInvalidClient          = "invalid_client"
	oauthInvalidGrant           = "invalid_grant"
	oauthUnauthorizedClient     = "unauthorized_client"
	oauthUnsupportedGrantType   = "unsupported_grant_type"
	oauthInvalidScope           = "invalid_scope"
	oauthInvalidTarget          = "invalid_target"
	oauthServerError            = "server_error"
	oauthTemporarilyUnavailable = "temporarily_unavailable"
)

// oauthError is a refusal with its OAuth error code and status.
type oauthError struct {
	status int
	code   string
	err    error
}

func (e *oauthError) Error() string { return e.code + ": " + e.err.Error() }
func (e *oauthError) Unwrap() error { return e.err }

// oauthRefuse builds an oauthError; err's domain sentinel (if any) keeps
// classifying it for the audit reason.
func oauthRefuse(status int, code string, err error) error {
	return &oauthError{status: status, code: code, err: err}
}

func badOAuthRequest(format string, args ...any) error {
	return oauthRefuse(fiber.StatusBadRequest, oauthInvalidRequest, fmt.Errorf(format+": %w", append(args, domain.ErrInvalidInput)...))
}

// oauthForm reads an OAuth request's parameters: from a form body only,
// none in the query, none repeated. A parameter sent without a value is
// left out (RFC 6749 §3.1).
func oauthForm(c *fiber.Ctx) (url.Values, error) {
	if len(c.Request().URI().QueryString()) > 0 {
		return nil, badOAuthRequest("parameters in the URL are refused: send them in an application/x-www-form-urlencoded body (RFC 6749 §3.2, RFC 6750 §5.3)")
	}
	if mt, _, err := mime.ParseMediaType(c.Get(fiber.HeaderContentType)); err != nil || mt != fiber.MIMEApplicationForm {
		return nil, badOAuthRequest("the body must be application/x-www-form-urlencoded")
	}
	form, err := url.ParseQuery(string(c.Body()))
	if err != nil {
		return nil, badOAuthRequest("the form body does not parse")
	}
	for k, vs := range form {
		if len(vs) > 1 {
			return nil, badOAuthRequest("parameter %s is repeated (RFC 6749 §3.2)", printable(k))
		}
		if vs[0] == "" {
			delete(form, k)
		}
	}
	return form, nil
}

// oauthCodeFor is the OAuth error code of an answer no handler named one
// for: the edge's own refusals (no credential, a role without the
// permission, an oversized body).
func oauthCodeFor(status int) string {
	switch {
	case status == fiber.StatusUnauthorized:
		return oauthInvalidClient
	case status == fiber.StatusForbidden:
		return oauthUnauthorizedClient
	case status == fiber.StatusTooManyRequests || status == fiber.StatusServiceUnavailable:
		return oauthTemporarilyUnavailable
	case status >= 500:
		return oauthServerError
	}
	return oauthInvalidRequest
}

// oauthErrorBody is RFC 6749 §5.2's error response.
type oauthErrorBody struct {
	Error       string `json:"error"`
	Description string `json:"error_description"`
	ReasonCode  string `json:"reason_code,omitempty"`
	RequestID   string `json:"request_id"`
}

// writeOAuthError answers err on an /oauth2/* endpoint; p is what the
// error handler made of it (status, client-safe message, reason code).
func writeOAuthError(c *fiber.Ctx, err error, p problem) error {
	status, code, desc := p.status, oauthCodeFor(p.status), p.detail.Message
	var oe *oauthError
	if errors.As(err, &oe) {
		status, code = oe.status, oe.code
		if status < 500 {
			desc = oe.err.Error()
		}
	}
	if status != fiber.StatusUnauthorized {
		// The edge set a challenge for the error's 401; this answer is no
		// authentication challenge, and clients would take it for one.
		c.Response().Header.Del(fiber.HeaderWWWAuthenticate)
	}
	if status == fiber.StatusTooManyRequests {
		var rl *rateLimited
		if errors.As(err, &rl) {
			c.Set(fiber.HeaderRetryAfter, strconv.Itoa(rl.retryAfter))
		}
	}
	return c.Status(status).JSON(oauthErrorBody{Error: code, Description: printable(desc), ReasonCode: p.detail.ReasonCode, RequestID: requestID(c)})
}

// printable keeps the characters RFC 6749 §5.2 allows in
// error_description (printable ASCII but '"' and '\'), replacing the
// others.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '"':
			return '\''
		case r == '\\':
			return '/'
		case r < 0x20 || r > 0x7e:
			return '?'
		}
		return r
	}, s)
}
