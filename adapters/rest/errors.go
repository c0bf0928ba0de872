package rest

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gofiber/fiber/v2"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/domain"
)

// errorBody is the one error shape of the API.
type errorBody struct {
	Error     errorDetail `json:"error"`
	RequestID string      `json:"request_id"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Reason and Missing explain a 403.
	Reason  string `json:"reason,omitempty"`
	Missing string `json:"missing,omitempty"`
	// ReasonCode is the machine-readable form of Reason.
	ReasonCode string `json:"reason_code,omitempty"`
	// Position is where a policy rule's condition fails to compile.
	Position *errorPosition `json:"position,omitempty"`
}

// errorPosition is a 1-based line and column in a text the request sent.
type errorPosition struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// problem is what the error handler decided to send.
type problem struct {
	status int
	detail errorDetail
}

// clientMessager is an error that carries a message written for clients,
// naming which dependency failed without its internals (hybrid mode's
// central instance, for one).
type clientMessager interface{ ClientMessage() string }

// reasonCoder is an error that names its reason code (an agent-token
// refusal); the code goes into the body and the access log whatever the
// status.
type reasonCoder interface{ ReasonCode() string }

// classify maps an error to its status and client-safe detail, with the
// error's own reason code when it names one.
func classify(err error) problem {
	p := classifyStatus(err)
	var rc reasonCoder
	if errors.As(err, &rc) {
		p.detail.ReasonCode = rc.ReasonCode()
		if p.status == fiber.StatusUnauthorized {
			p.detail.Message = err.Error() // says which check the token failed; names no secret
		}
	}
	return p
}

// classifyStatus maps an error to its status and client-safe detail.
// Messages of 4xx domain errors are written for clients; anything else
// becomes a generic 500 whose details stay in the log.
func classifyStatus(err error) problem {
	var denied *domain.AccessDenied
	var refused *domain.Refusal
	var fe *fiber.Error
	switch {
	case errors.As(err, &denied):
		reason := denied.Decision.Reason()
		return problem{fiber.StatusForbidden, errorDetail{Code: "forbidden", Message: reason, Reason: reason, Missing: string(denied.Decision.Permission),
			ReasonCode: denied.Decision.ReasonCode()}}
	case errors.As(err, &refused):
		return problem{fiber.StatusForbidden, errorDetail{Code: "forbidden", Message: refused.Message, Reason: refused.Message,
			Missing: string(refused.Missing), ReasonCode: refused.Code}}
	case errors.Is(err, domain.ErrUnauthenticated):
		return problem{fiber.StatusUnauthorized, errorDetail{Code: "unauthenticated", Message: unauthenticatedMessage(err)}}
	case errors.Is(err, domain.ErrForbidden):
		// Refused for a reason no permission would lift (a cross-site request).
		return problem{fiber.StatusForbidden, errorDetail{Code: "forbidden", Message: err.Error(), Reason: err.Error(), ReasonCode: domain.ReasonRequestRefused}}
	case errors.Is(err, domain.ErrNotFound):
		return problem{fiber.StatusNotFound, errorDetail{Code: "not_found", Message: err.Error()}}
	case errors.Is(err, domain.ErrInvalidInput):
		d := errorDetail{Code: "invalid_request", Message: err.Error()}
		var ce *domain.ConditionError
		if errors.As(err, &ce) {
			d.Position = &errorPosition{Line: ce.Line, Column: ce.Column}
		}
		return problem{fiber.StatusBadRequest, d}
	case errors.Is(err, domain.ErrConflict):
		return problem{fiber.StatusConflict, errorDetail{Code: "conflict", Message: err.Error()}}
	case errors.Is(err, domain.ErrTooManyRequests):
		return problem{fiber.StatusTooManyRequests, errorDetail{Code: "too_many_requests", Message: "too many requests; retry later"}}
	case errors.Is(err, domain.ErrUnavailable):
		msg := "a service this request depends on is unavailable; retry later"
		var cm clientMessager
		if errors.As(err, &cm) {
			msg = cm.ClientMessage()
		}
		return problem{fiber.StatusServiceUnavailable, errorDetail{Code: "unavailable", Message: msg}}
	case errors.As(err, &fe):
		return problem{fe.Code, errorDetail{Code: codeFor(fe.Code), Message: fe.Message}}
	}
	return problem{fiber.StatusInternalServerError, errorDetail{Code: "internal", Message: "internal error; the request id identifies it in the server log"}}
}

// errMalformedAuthorization is a request whose Authorization header breaks
// RFC 6750's syntax: 400 invalid_request (§3.1), never a 401 that a client
// would answer by retrying the same header.
var errMalformedAuthorization = fmt.Errorf("malformed Authorization header: %w", domain.ErrInvalidInput)

// errMissingCredential and errBadCredential are the two 401s the edge
// produces itself; clients learn no more than which of the two it was. The
// three header mistakes say what is wrong with the header, never what it
// held: a key sent without the scheme is the commonest first request.
var (
	errMissingCredential  = errors.New("authentication required: send Authorization: Bearer <credential>")
	errBadCredential      = errors.New("credential not accepted")
	errNoBearerScheme     = errors.New("the Authorization header lacks the scheme Bearer: send Authorization: Bearer <credential>")
	errOtherScheme        = errors.New("the Authorization header's scheme is not Bearer: send Authorization: Bearer <credential>")
	errNoBearerCredential = errors.New("the Authorization header has no credential after Bearer")
)

// errDebugOffLoopback refuses a debug principal (a built-in debug key,
// possibly through a hybrid centre) on an edge that is not loopback-only:
// the deployment is wrong, not the caller, hence 503.
var errDebugOffLoopback = unavailableMessage("a debug-mode identity source answered, and debug principals are served only on a loopback address; the operator must turn debug mode off at the centre")

func unauthenticatedMessage(err error) string {
	for _, told := range []error{errMissingCredential, errNoBearerScheme, errOtherScheme, errNoBearerCredential} {
		if errors.Is(err, told) {
			return told.Error()
		}
	}
	return errBadCredential.Error()
}

func codeFor(status int) string {
	switch status {
	case fiber.StatusNotFound:
		return "not_found"
	case fiber.StatusMethodNotAllowed:
		return "method_not_allowed"
	case fiber.StatusRequestEntityTooLarge:
		return "too_large"
	case fiber.StatusUnsupportedMediaType:
		return "unsupported_media_type"
	case fiber.StatusRequestHeaderFieldsTooLarge:
		return "headers_too_large"
	case fiber.StatusServiceUnavailable:
		return "unavailable"
	}
	if status >= 500 {
		return "internal"
	}
	return "invalid_request"
}

// handleError is Fiber's ErrorHandler: it writes the error body.
func (s *Server) handleError(c *fiber.Ctx, err error) error {
	securityHeaders(c) // also for errors fasthttp finds before any stage runs
	p := classify(err)
	st := stateOf(c)
	st.reason = p.detail.ReasonCode
	if st.reason == "" {
		st.reason = p.detail.Code
	}
	if p.status == fiber.StatusInternalServerError {
		s.log.Error("request failed", zap.String("request_id", requestID(c)), zap.Error(err))
	}
	if errors.Is(err, errMalformedAuthorization) {
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="agentauth", error="invalid_request"`)
	}
	if p.status == fiber.StatusUnauthorized {
		if errors.Is(err, errMissingCredential) {
			st.reason = reasonCredentialMissing
			c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="agentauth"`+s.gatewayChallenge(c))
		} else {
			if st.reason == p.detail.Code {
				st.reason = reasonCredentialInvalid
			}
			c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="agentauth", error="invalid_token"`+s.gatewayChallenge(c))
		}
	}
	if strings.HasPrefix(c.Path(), oauthPrefix) {
		return writeOAuthError(c, err, p)
	}
	if s.wantsPage(c, p.status) {
		return s.writePage(c, p)
	}
	return c.Status(p.status).JSON(errorBody{Error: p.detail, RequestID: requestID(c)})
}

// Reason codes of the two 401s in the access log.
const (
	reasonCredentialMissing = "credential_missing"
	reasonCredentialInvalid = "credential_invalid"
)

// unavailableMessage is a 503 whose message is written for clients.
type unavailableMessage string

func (m unavailableMessage) Error() string         { return string(m) }
func (m unavailableMessage) ClientMessage() string { return string(m) }
func (m unavailableMessage) Is(target error) bool  { return target == domain.ErrUnavailable }
