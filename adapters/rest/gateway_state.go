package rest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/agentauth/agentauth/domain"
)

// methodAction is what the gateway does with one MCP method.
type methodAction int

const (
	// ruleForward: relayed as is (initialize with client capabilities
	// stripped; tools/list with the result filtered).
	ruleForward methodAction = iota
	// ruleToolsCall: decided, then forwarded, refused or held.
	ruleToolsCall
	// ruleRefuse: answered -32601 (a notification: dropped), never
	// forwarded: policy covers tools only, so resources, prompts,
	// completion and logging stay closed until it covers them.
	ruleRefuse
)

// methodRules lists every method the gateway relays; any other is refused.
var methodRules = map[string]methodAction{
	"initialize":                ruleForward,
	"ping":                      ruleForward,
	"tools/list":                ruleForward,
	"tools/call":                ruleToolsCall,
	"notifications/initialized": ruleForward,
	"notifications/cancelled":   ruleForward,
	"notifications/progress":    ruleForward,
}

func ruleOf(method string) methodAction {
	if r, ok := methodRules[method]; ok {
		return r
	}
	return ruleRefuse
}

func contextWithTimeout(c *fiber.Ctx, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.UserContext(), d)
}

// maxMCPSessions bounds the gateway's MCP sessions on one instance.
const maxMCPSessions = 100_000

// mcpSession is one MCP session through the gateway: the server's own
// session id (the client never sees it) and the agent that opened it.
type mcpSession struct {
	server, owner, upstream string
	last                    time.Time
	// ctx ends with the session (DELETE) or the server: the streams
	// relayed for it end then.
	ctx    context.Context
	cancel context.CancelFunc
}

// mcpSessions maps the gateway's session ids to sessions. They live on
// the instance that answered initialize (route a session's requests to
// one instance, by its Mcp-Session-Id); an unknown id is 404, upon which
// clients initialize again.
type mcpSessions struct {
	mu   sync.Mutex
	m    map[string]*mcpSession
	max  int
	idle time.Duration
	// ctx ends when the server shuts down, and with it every stream.
	ctx  context.Context
	stop context.CancelFunc
}

func newMCPSessions(limit int, idle time.Duration) *mcpSessions {
	ctx, stop := context.WithCancel(context.Background())
	return &mcpSessions{m: map[string]*mcpSession{}, max: limit, idle: max(idle, time.Hour), ctx: ctx, stop: stop}
}

func (s *mcpSessions) add(server, owner, upstream string) (string, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) >= s.max {
		for k, v := range s.m {
			if now.Sub(v.last) > s.idle {
				v.cancel()
				delete(s.m, k)
			}
		}
	}
	if len(s.m) >= s.max {
		return "", fmt.Errorf("%d MCP sessions are open on this instance: %w", s.max, domain.ErrTooManyRequests)
	}
	ctx, cancel := context.WithCancel(s.ctx)
	s.m[id] = &mcpSession{server: server, owner: owner, upstream: upstream, last: now, ctx: ctx, cancel: cancel}
	return id, nil
}

// get finds session id of owner at server.
func (s *mcpSessions) get(id, server, owner string) (*mcpSession, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ms, ok := s.m[id]
	if !ok || ms.server != server || ms.owner != owner || time.Since(ms.last) > s.idle {
		return nil, false
	}
	ms.last = time.Now()
	cp := *ms
	return &cp, true
}

func (s *mcpSessions) remove(id string) {
	s.mu.Lock()
	if ms, ok := s.m[id]; ok {
		ms.cancel()
		delete(s.m, id)
	}
	s.mu.Unlock()
}

// credentialTTL is how long a read credential is used before the file is
// read again (a rotated Secret is picked up within it).
const credentialTTL = 10 * time.Second

// credentialCache reads upstream credentials from their folder, keeping
// each for credentialTTL so that a call costs no file read.
type credentialCache struct {
	dir string
	mu  sync.Mutex
	m   map[string]cachedCredential
}

type cachedCredential struct {
	value string
	read  time.Time
}

func newCredentialCache(dir string) *credentialCache {
	return &credentialCache{dir: dir, m: map[string]cachedCredential{}}
}

// get returns credential name's value; "" for no credential.
func (cc *credentialCache) get(name string) (string, error) {
	if name == "" {
		return "", nil
	}
	if cc.dir == "" {
		return "", fmt.Errorf("credential %s: gateway.credentialsDir is not set", name)
	}
	if err := domain.ValidateCredentialName(name); err != nil {
		return "", err
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if c, ok := cc.m[name]; ok && time.Since(c.read) < credentialTTL {
		return c.value, nil
	}
	b, err := os.ReadFile(filepath.Join(cc.dir, name))
	if err != nil {
		return "", fmt.Errorf("credential %s: %w", name, err)
	}
	v := strings.TrimRight(string(b), "\r\n")
	if !domain.IsBearerToken(v) {
		return "", fmt.Errorf("credential %s: not a Bearer token (RFC 6750 characters)", name)
	}
	cc.m[name] = cachedCredential{value: v, read: time.Now()}
	return v, nil
}
