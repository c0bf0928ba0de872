package app

import (
	"context"
	"strconv"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// SessionRecords is the agent sessions and their agents as every use case
// reads and writes them: an agent token's every use reads its session and
// the chain of its agents, and a decision its session. After KeepInMemory
// it answers from memory, once the store has answered, a session by ID, an
// agent by ID, and the first page of session lists (no cursor, the default
// size) per store filter (see memory).
//
// The store filter of a list is the owner and projects that decide what its
// readers may see, so callers who see the same set share a page and no
// caller is served another's. A session created, whose mode changed, or
// deleted, here or reported by the watcher, forgets everything. Agents are
// never changed nor removed once created (the store has no way to): an
// agent kept stays right, and an agent not found is not kept, since
// creating one reports nothing.
type SessionRecords struct {
	sessions ports.SessionStore
	modes    ports.SessionModeStore
	agents   ports.AgentStore
	// mem is nil until KeepInMemory: every read goes to the store.
	mem *memory
}

var (
	_ ports.SessionStore     = (*SessionRecords)(nil)
	_ ports.SessionModeStore = (*SessionRecords)(nil)
	_ ports.AgentStore       = (*SessionRecords)(nil)
)

// NewSessionRecords reads and writes through the stores given.
func NewSessionRecords(sessions ports.SessionStore, modes ports.SessionModeStore, agents ports.AgentStore) *SessionRecords {
	return &SessionRecords{sessions: sessions, modes: modes, agents: agents}
}

// maxSessionEntries bounds what is kept. A page holds at most
// DefaultPageSize+1 sessions (about 10 kB), a session or an agent a few
// hundred bytes: at most about 80 MB if every entry were a page, which
// takes 8,192 callers with different views.
const maxSessionEntries = 8192

// KeepInMemory makes the reads served from memory after their first, with
// watch reporting the sessions every instance changes. Call it before
// serving; it returns the function that stops watching.
func (r *SessionRecords) KeepInMemory(watch ports.LoginSessionWatcher) (stop func()) {
	r.mem = newMemory(ports.IsSessionReport, maxSessionEntries)
	return r.mem.keepWatching(watch)
}

// Keys of what is kept.
const (
	sessionKey = "session:"
	agentKey   = "agent:"
	listPrefix = "list:"
)

// listKey names the sessions f selects, its page aside: each of the owner
// and projects prefixed by its length, so that no two filters share a key.
func listKey(f ports.SessionFilter) string {
	b := make([]byte, 0, 64)
	b = append(b, listPrefix...)
	for _, s := range append([]string{f.Owner}, f.Projects...) {
		b = strconv.AppendInt(b, int64(len(s)), 10)
		b = append(b, ':')
		b = append(b, s...)
	}
	return string(b)
}

// cacheable reports whether f asks for a page kept in memory: the first, of
// the default size.
func cacheable(f ports.SessionFilter) bool {
	return f.After.IsZero() && f.Limit == DefaultPageSize+1
}

// CreateSession stores a session, answered once every instance has
// forgotten what it kept.
func (r *SessionRecords) CreateSession(ctx context.Context, s domain.Session) error {
	return r.mem.change(ctx, ports.SessionChangeKey(s.ID), func() error { return r.sessions.CreateSession(ctx, s) })
}

// GetSession returns the session id.
func (r *SessionRecords) GetSession(ctx context.Context, id string) (domain.Session, error) {
	return kept(r.mem, sessionKey+id, func() (domain.Session, error) { return r.sessions.GetSession(ctx, id) })
}

// ListSessions returns the sessions f selects: the first page of the
// default size from memory, any other from the store. The page is shared:
// callers do not change it.
func (r *SessionRecords) ListSessions(ctx context.Context, f ports.SessionFilter) ([]domain.Session, error) {
	if !cacheable(f) {
		return r.sessions.ListSessions(ctx, f)
	}
	return kept(r.mem, listKey(f), func() ([]domain.Session, error) { return r.sessions.ListSessions(ctx, f) })
}

// DeleteSession removes the session id, answered once every instance has
// forgotten what it kept.
func (r *SessionRecords) DeleteSession(ctx context.Context, id string) error {
	return r.mem.change(ctx, ports.SessionChangeKey(id), func() error { return r.sessions.DeleteSession(ctx, id) })
}

// SetSessionMode changes the mode of the session id, answered once every
// instance has forgotten what it kept.
func (r *SessionRecords) SetSessionMode(ctx context.Context, id string, mode domain.SessionMode) error {
	return r.mem.change(ctx, ports.SessionChangeKey(id), func() error { return r.modes.SetSessionMode(ctx, id, mode) })
}

// CreateAgent stores an agent.
func (r *SessionRecords) CreateAgent(ctx context.Context, a domain.Agent) error {
	return r.agents.CreateAgent(ctx, a)
}

// GetAgent returns the agent id.
func (r *SessionRecords) GetAgent(ctx context.Context, id string) (domain.Agent, error) {
	return keptFound(r.mem, agentKey+id, func() (domain.Agent, error) { return r.agents.GetAgent(ctx, id) })
}

// ListAgents reads a page of the session's agents from the store.
func (r *SessionRecords) ListAgents(ctx context.Context, session string, page ports.Page) ([]domain.Agent, error) {
	return r.agents.ListAgents(ctx, session, page)
}

// CountSubAgents reads from the store how many of the session's agents
// have a parent.
func (r *SessionRecords) CountSubAgents(ctx context.Context, session string) (int, error) {
	return r.agents.CountSubAgents(ctx, session)
}
