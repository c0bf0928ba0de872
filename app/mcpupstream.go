package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/mcpwire"
	"github.com/agentauth/agentauth/ports"
)

// Each server is spoken to in its own era: the gateway learns, per
// server and instance, whether it serves MCP 2026-07-28 (server/discover
// answers and offers it) or only the initialize handshake of 2025, and
// bridges either kind of client to either kind of server.

// eraTTL is how long what the gateway learned of a server's era holds.
const eraTTL = 5 * time.Minute

// legacyVersion is the version the gateway offers a 2025 server.
const legacyVersion = "2025-11-25"

// gatewayClient is the gateway's own client info, upstream.
var gatewayClient = json.RawMessage(`{"name":"agentauth-gateway","version":"1"}`)

// upstreamEra is what the gateway learned of a server.
type upstreamEra struct {
	// modern: it serves MCP 2026-07-28; version is what it is spoken
	// (Modern, or the 2025 version it negotiated).
	modern  bool
	version string
	// capabilities, serverInfo and instructions are its own, as it
	// answered server/discover or initialize.
	capabilities, serverInfo json.RawMessage
	instructions             string
	until                    time.Time
}

// upstreams keeps, per server, its era, the 2025 sessions the gateway
// holds with it for 2026 clients, and its tools' header bindings.
type upstreams struct {
	mu       sync.Mutex
	eras     map[string]*eraEntry
	sessions map[string]legacySession
	tools    map[string]*serverTools
	now      func() time.Time
}

type eraEntry struct {
	endpoint string
	learning sync.Mutex // one learner at a time
	mu       sync.Mutex
	era      upstreamEra
}

// legacySession is a 2025 session the gateway opened with a server for
// the calls of one caller's agent (a 2026 client has none of its own).
type legacySession struct {
	id, version string
}

// maxLegacySessions bounds the sessions kept; past it, the oldest half
// is forgotten (their next call opens a new one).
const maxLegacySessions = 10_000

func newUpstreams() *upstreams {
	return &upstreams{eras: map[string]*eraEntry{}, sessions: map[string]legacySession{}, tools: map[string]*serverTools{}, now: time.Now}
}

// What the gateway learned of a server is kept by its name, with the
// endpoint it was learned at: a server registered anew at another
// endpoint is another server.

// eraOf is what the gateway knows of x's server's era, learned now (with
// the credential x's server gets) if it knows nothing current.
func (s *MCPGateway) eraOf(ctx context.Context, x *exchange) (upstreamEra, error) {
	if era, ok := s.knownEra(x.sv); ok {
		return era, nil
	}
	cred, err := s.credential(ctx, x)
	if err != nil {
		return upstreamEra{}, err
	}
	return s.era(ctx, x.sv, cred)
}

// knownEra is what the gateway knows of sv's era now, if anything.
func (s *MCPGateway) knownEra(sv domain.Server) (upstreamEra, bool) {
	u := s.upstreams
	u.mu.Lock()
	e, ok := u.eras[sv.Name]
	u.mu.Unlock()
	if !ok || e.endpoint != sv.Endpoint {
		return upstreamEra{}, false
	}
	return e.current(u.now())
}

// era is what the gateway knows of sv's era, learned now with cred (the
// credential sv gets for this request's caller) if it knows nothing
// current.
func (s *MCPGateway) era(ctx context.Context, sv domain.Server, cred string) (upstreamEra, error) {
	u := s.upstreams
	u.mu.Lock()
	e, ok := u.eras[sv.Name]
	if !ok || e.endpoint != sv.Endpoint {
		e = &eraEntry{endpoint: sv.Endpoint}
		u.eras[sv.Name] = e
	}
	u.mu.Unlock()
	if era, ok := e.current(u.now()); ok {
		return era, nil
	}
	e.learning.Lock()
	defer e.learning.Unlock()
	if era, ok := e.current(u.now()); ok {
		return era, nil
	}
	era, err := s.learnEra(ctx, sv, cred)
	if err != nil {
		return era, err
	}
	e.mu.Lock()
	e.era = era
	e.mu.Unlock()
	return era, nil
}

func (e *eraEntry) current(now time.Time) (upstreamEra, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.era, now.Before(e.era.until)
}

// forgetEra drops what the gateway learned of sv: its answers say it
// changed.
func (s *MCPGateway) forgetEra(sv domain.Server) {
	u := s.upstreams
	u.mu.Lock()
	delete(u.eras, sv.Name)
	u.mu.Unlock()
}

// learnEra asks sv: server/discover first (2026-07-28 servers must answer
// it, server/discover.mdx), else the initialize handshake of 2025.
func (s *MCPGateway) learnEra(ctx context.Context, sv domain.Server, cred string) (upstreamEra, error) {
	ctx, cancel := context.WithTimeout(ctx, s.set.CallTimeout)
	defer cancel()
	until := s.upstreams.now().Add(eraTTL)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "agentauth-discover", "method": "server/discover",
		"params": map[string]any{"_meta": modernMeta(json.RawMessage(`{}`))}})
	id := json.RawMessage(`"agentauth-discover"`)
	rep, err := s.up.Post(ctx, ports.MCPRequest{Endpoint: sv.Endpoint, Credential: cred, ProtocolVersion: mcpwire.Modern,
		Method: "server/discover", Body: body}, id)
	if err != nil {
		return upstreamEra{}, err
	}
	var res struct {
		SupportedVersions []string        `json:"supportedVersions"`
		Capabilities      json.RawMessage `json:"capabilities"`
		Instructions      string          `json:"instructions"`
		Meta              struct {
			ServerInfo json.RawMessage `json:"io.modelcontextprotocol/serverInfo"`
		} `json:"_meta"`
	}
	if rep.Status == 200 && len(rep.Messages) > 0 && json.Unmarshal(rep.Messages[len(rep.Messages)-1].Result, &res) == nil &&
		slices.Contains(res.SupportedVersions, mcpwire.Modern) {
		return upstreamEra{modern: true, version: mcpwire.Modern, capabilities: res.Capabilities, serverInfo: res.Meta.ServerInfo,
			instructions: res.Instructions, until: until}, nil
	}
	// A 2025 server: its initialize answer, and its session ended at once.
	body, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "agentauth-initialize", "method": "initialize",
		"params": map[string]any{"protocolVersion": legacyVersion, "capabilities": map[string]any{}, "clientInfo": gatewayClient}})
	id = json.RawMessage(`"agentauth-initialize"`)
	r := ports.MCPRequest{Endpoint: sv.Endpoint, Credential: cred, Body: body}
	rep, err = s.up.Post(ctx, r, id)
	if err != nil {
		return upstreamEra{}, err
	}
	if rep.SessionID != "" {
		r.SessionID, r.Body = rep.SessionID, nil
		_, _ = s.up.Delete(ctx, r)
	}
	var ini struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ServerInfo      json.RawMessage `json:"serverInfo"`
		Instructions    string          `json:"instructions"`
	}
	if rep.Status != 200 || len(rep.Messages) == 0 || rep.Messages[len(rep.Messages)-1].Result == nil {
		return upstreamEra{}, fmt.Errorf("server %s answered neither server/discover nor initialize (HTTP %d)", sv.Name, rep.Status)
	}
	_ = json.Unmarshal(rep.Messages[len(rep.Messages)-1].Result, &ini)
	if !slices.Contains(legacyVersions, ini.ProtocolVersion) {
		ini.ProtocolVersion = legacyVersion
	}
	return upstreamEra{version: ini.ProtocolVersion, capabilities: ini.Capabilities, serverInfo: ini.ServerInfo,
		instructions: ini.Instructions, until: until}, nil
}

// modernMeta is the _meta of a request the gateway sends a 2026-07-28
// server in its own name, or for a 2025 client: the version, the
// gateway's client info, and caps.
func modernMeta(caps json.RawMessage) map[string]json.RawMessage {
	return map[string]json.RawMessage{mcpwire.MetaProtocolVersion: json.RawMessage(`"` + mcpwire.Modern + `"`),
		mcpwire.MetaClientInfo: gatewayClient, mcpwire.MetaClientCapabilities: caps}
}

// legacySession is the 2025 session the gateway holds with x's server for
// x's caller and agent, opened now when there is none (or fresh).
func (s *MCPGateway) legacySession(ctx context.Context, x *exchange, era upstreamEra, fresh bool) (legacySession, error) {
	u := s.upstreams
	key := x.sv.Name + "\x00" + x.sv.Endpoint + "\x00" + ownerOf(x.cl)
	u.mu.Lock()
	ls, ok := u.sessions[key]
	u.mu.Unlock()
	if ok && !fresh {
		return ls, nil
	}
	cred, err := s.credential(ctx, x)
	if err != nil {
		return ls, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.set.CallTimeout)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "agentauth-initialize", "method": "initialize",
		"params": map[string]any{"protocolVersion": era.version, "capabilities": map[string]any{}, "clientInfo": gatewayClient}})
	r := ports.MCPRequest{Endpoint: x.sv.Endpoint, Credential: cred, Body: body}
	rep, err := s.up.Post(ctx, r, json.RawMessage(`"agentauth-initialize"`))
	if err == nil && rep.Status != 200 {
		err = fmt.Errorf("initialize answered HTTP %d", rep.Status)
	}
	if err != nil {
		return ls, err
	}
	var ini struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(rep.Messages[len(rep.Messages)-1].Result, &ini)
	ls = legacySession{id: rep.SessionID, version: ini.ProtocolVersion}
	r.SessionID, r.ProtocolVersion = ls.id, ls.version
	r.Body = []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if _, err := s.up.Post(ctx, r, nil); err != nil {
		return ls, err
	}
	u.mu.Lock()
	if len(u.sessions) >= maxLegacySessions {
		n := 0
		for k := range u.sessions {
			delete(u.sessions, k)
			if n++; n >= maxLegacySessions/2 {
				break
			}
		}
	}
	u.sessions[key] = ls
	u.mu.Unlock()
	return ls, nil
}

// outbound is msg (as body) as it goes to x's server, in the server's era
// whichever the client's; fresh opens a new 2025 session for a 2026
// client (its last one ended).
func (s *MCPGateway) outbound(ctx context.Context, x *exchange, msg mcpwire.Message, body []byte, fresh bool) (ports.MCPRequest, error) {
	cred, err := s.credential(ctx, x)
	if err != nil {
		return ports.MCPRequest{}, err
	}
	r := ports.MCPRequest{Endpoint: x.sv.Endpoint, Credential: cred, Body: body}
	if !x.modern {
		if x.session != nil && x.session.Upstream != "" {
			r.SessionID, r.ProtocolVersion = x.session.Upstream, x.in.ProtocolVersion
			return r, nil
		}
		era, err := s.era(ctx, x.sv, cred)
		if err != nil || !era.modern {
			r.ProtocolVersion = x.in.ProtocolVersion
			return r, err
		}
		// A 2025 client's request to a 2026 server: the revision's _meta
		// (the gateway's client info, no capability) and headers.
		for k, v := range modernMeta(json.RawMessage(`{}`)) {
			if r.Body, err = mcpwire.SetMember(r.Body, v, "params", "_meta", k); err != nil {
				return r, err
			}
		}
		r.ProtocolVersion, r.Method = mcpwire.Modern, msg.Method
		if mcpwire.NamedMethods(msg.Method) {
			r.Name = mcpwire.EncodeHeaderValue(x.p.Name)
		}
		if msg.Method == "tools/call" {
			b, err := s.toolBindings(ctx, x, x.p.Name)
			if err != nil {
				return r, err
			}
			r.Params = paramHeaders(b, x.p.Arguments)
		}
		return r, nil
	}
	era, err := s.era(ctx, x.sv, cred)
	if err != nil {
		return r, err
	}
	switch caps := x.p.Meta.ClientCapabilities; {
	case !era.modern:
		// A 2025 server reads the 2026 _meta as a claim of that revision
		// against its header: none of it goes.
		for _, k := range []string{mcpwire.MetaProtocolVersion, mcpwire.MetaClientInfo, mcpwire.MetaClientCapabilities} {
			if r.Body, err = mcpwire.DeleteMember(r.Body, "params", "_meta", k); err != nil {
				return r, err
			}
		}
	case string(caps) != "{}":
		// The client's capabilities as far as the gateway relays them: a
		// server's elicitation comes back in an input_required result,
		// which passes through; sampling and roots do not.
		if caps, err = mcpwire.KeepCapabilities(caps, "elicitation"); err != nil {
			return r, err
		}
		if r.Body, err = mcpwire.SetMember(r.Body, caps, "params", "_meta", mcpwire.MetaClientCapabilities); err != nil {
			return r, err
		}
	}
	if x.ours != nil {
		if r.Body, err = x.ours.restore(r.Body); err != nil {
			return r, err
		}
	}
	if era.modern {
		// The headers as the gateway checked them, spelt anew (a server
		// need not decode what needed no encoding).
		r.ProtocolVersion, r.Method, r.Params = mcpwire.Modern, msg.Method, x.in.Params
		if mcpwire.NamedMethods(msg.Method) {
			r.Name = mcpwire.EncodeHeaderValue(x.p.Name)
			if msg.Method == "resources/read" {
				r.Name = mcpwire.EncodeHeaderValue(x.p.URI)
			}
		}
		if msg.Method == "tools/call" {
			r.Params = s.respelt(x)
		}
		return r, nil
	}
	ls, err := s.legacySession(ctx, x, era, fresh)
	if err != nil {
		return r, err
	}
	r.SessionID, r.ProtocolVersion = ls.id, ls.version
	return r, nil
}

// respelt are a 2026 client's Mcp-Param-* headers of a tools/call as
// they go upstream: those of the tool's bindings (which the gateway
// checked) spelt from the arguments, the others as sent.
func (s *MCPGateway) respelt(x *exchange) []ports.MCPParam {
	if len(x.in.Params) == 0 {
		return nil
	}
	b := s.knownBindings(x.sv, x.p.Name)
	out := paramHeaders(b, x.p.Arguments)
	for _, p := range x.in.Params {
		if !slices.ContainsFunc(b, func(b paramBinding) bool { return strings.EqualFold(b.header, p.Name) }) {
			out = append(out, p)
		}
	}
	return out
}

// errInputRequired: a 2026 server asked a 2025 client for input, which
// the client cannot give through the gateway.
var errInputRequired = errors.New("the server asked for input (input_required), which a 2025 client cannot give through the gateway")
