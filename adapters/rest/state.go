package rest

import (
	"net/netip"
	"sync"

	"github.com/gofiber/fiber/v2"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
)

// SessionCookie is the cookie that carries an OIDC login session.
const SessionCookie = "user_session"

// reqState is everything the stages learn about one request. One value per
// request comes from a pool and is kept in Locals under stateKey, so the
// stages share it without allocating.
type reqState struct {
	id string
	// client is the client's address, behind trusted proxies (clientAddress).
	client netip.Addr
	// clientString is client as text, made once for the audit record and
	// the access log (clientText).
	clientString string
	// target is the request target (path and query, as sent) as every
	// record keeps it: credentials replaced (Config.Redactor).
	target    string
	principal domain.Principal
	// authenticated is set once the authenticate stage accepted a credential.
	authenticated bool
	// decided is set once the authorize stage ran; decision is its outcome.
	decided  bool
	decision domain.Decision
	// note is what the handler adds to the audit reason (a tool-call
	// decision, an approval, a login).
	note string
	// public marks an endpoint that needs no credential but is audited
	// (the login endpoints).
	public bool
	// refused: the request was answered, but what it asked for was refused.
	refused bool
	// agent is the grant of an agent token that authenticated the
	// request; nil for every other credential.
	agent *domain.AgentGrant
	// reason is the code of an error answer, for the access log (a
	// constant: reason_code of a 403, else the error code).
	reason string
	// logFields is the access log line's fields: pooled with the state, so
	// that writing the line allocates no slice.
	logFields [9]zap.Field
	// intent is what the stores write beside every change this request
	// makes (the audit outbox); the handlers' context points at it.
	intent domain.AuditIntent
	// keyOwnerChange names the change of the caller's managed keys its
	// roles made (a narrowing), for the audit record.
	keyOwnerChange string
	// mcp is an MCP gateway request as read for the flow (pooled with the
	// state, so that reading it allocates nothing).
	mcp app.MCPRequest
}

type stateKey struct{}

var statePool = sync.Pool{New: func() any { return new(reqState) }}

func stateOf(c *fiber.Ctx) *reqState {
	if st, ok := c.Locals(stateKey{}).(*reqState); ok {
		return st
	}
	return &reqState{} // only for handlers tested without the chain
}

func requestID(c *fiber.Ctx) string { return stateOf(c).id }

// principalOf returns the authenticated caller.
func principalOf(c *fiber.Ctx) domain.Principal { return stateOf(c).principal }

// clientText is the client's address as the audit record and the access
// log write it.
func (st *reqState) clientText() string {
	if st.clientString == "" {
		st.clientString = st.client.String()
	}
	return st.clientString
}
