package domain

import (
	"fmt"
	"time"
)

// SessionMode governs what the agents of a session may do with tools.
type SessionMode string

// Session modes, from strictest to loosest.
const (
	ModeReadonly SessionMode = "readonly" // only read-only tools
	ModeAsk      SessionMode = "ask"      // every tool call needs approval
	ModeAuto     SessionMode = "auto"     // what policy allows runs
)

// ParseSessionMode accepts a known mode name.
func ParseSessionMode(s string) (SessionMode, error) {
	switch m := SessionMode(s); m {
	case ModeReadonly, ModeAsk, ModeAuto:
		return m, nil
	}
	return "", fmt.Errorf("session mode %q: want readonly, ask or auto: %w", s, ErrInvalidInput)
}

// SessionState is where an agent session is in its life.
type SessionState string

// Session states.
const (
	SessionActive SessionState = "active"
	SessionClosed SessionState = "closed"
)

// Session is an agent session owned by one subject.
type Session struct {
	ID        string
	Owner     string
	Project   string
	Title     string
	Mode      SessionMode
	State     SessionState
	CreatedAt time.Time
}

// SessionScope is how much of the session table a principal may see.
type SessionScope int

// Session scopes, from narrowest to widest.
const (
	ScopeOwn SessionScope = iota // only sessions the principal owns
	ScopeAll                     // every session
)

// SessionReadScope returns how widely the roles may read sessions: every
// session with sessions:audit or sessions:manage, else only the caller's own.
func (a *Authorizer) SessionReadScope(roles []Role) SessionScope {
	if a.Decide(roles, PermSessionsManage).Allowed || a.Decide(roles, PermSessionsAudit).Allowed {
		return ScopeAll
	}
	return ScopeOwn
}

// CanManageSession reports whether p may change or delete s: its owner, or a
// holder of sessions:manage.
func (a *Authorizer) CanManageSession(p Principal, s Session) bool {
	return s.Owner == p.Subject || a.Decide(p.Roles, PermSessionsManage).Allowed
}

// CanReadSession reports whether p may see s.
func (a *Authorizer) CanReadSession(p Principal, s Session) bool {
	return s.Owner == p.Subject || a.SessionReadScope(p.Roles) == ScopeAll
}
