package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/mcpwire"
	"github.com/agentauth/agentauth/ports"
)

// MCPUpstreamFailed is a server's failure to answer what the gateway
// itself asked: the edge answers 502 with Message; Err says more, for the
// service's log only.
type MCPUpstreamFailed struct {
	Message string
	Err     error
}

func (e *MCPUpstreamFailed) Error() string { return e.Message }

// ImportTools asks server for its tools (every page of its tools/list, as
// the gateway with its credential, or p's own for a server with
// upstream_auth, in the server's era) and compares them
// with the registry; with apply it registers the new ones
// (Gateway.ImportTools).
func (s *MCPGateway) ImportTools(ctx context.Context, p domain.Principal, server string, apply bool) (ToolsDiff, error) {
	sv, err := s.decide.Server(ctx, server)
	if err != nil {
		return ToolsDiff{}, err
	}
	cred, _, err := s.credentialOf(ctx, sv, UpstreamPerson{Subject: p.Subject})
	var nc *NotConnectedError
	if errors.As(err, &nc) {
		return ToolsDiff{}, fmt.Errorf("server %s lists its tools to a connected person, and you are not connected: connect at %s, then import: %w", sv.Name, nc.URL, domain.ErrConflict)
	}
	if err != nil {
		return ToolsDiff{}, &MCPUpstreamFailed{Message: "the gateway has no credential for server " + sv.Name, Err: err}
	}
	era, err := s.era(ctx, sv, cred)
	if err != nil {
		return ToolsDiff{}, &MCPUpstreamFailed{Message: "server " + sv.Name + " did not answer: " + upstreamSummary(err), Err: err}
	}
	ctx2, cancel := context.WithTimeout(ctx, s.set.CallTimeout)
	defer cancel()
	listed, err := s.listTools(ctx2, sv, era, cred)
	if err != nil {
		return ToolsDiff{}, &MCPUpstreamFailed{Message: "server " + sv.Name + " did not list its tools: " + upstreamSummary(err), Err: err}
	}
	tools := make([]domain.Tool, len(listed))
	for i, l := range listed {
		tools[i] = domain.Tool{Name: l.Name, ReadOnly: l.Annotations.ReadOnlyHint, Description: l.Description,
			Pin: domain.ToolPin{Definition: l.definition, Digest: domain.DefinitionDigest([]byte(l.definition))}}
	}
	return s.decide.ImportTools(ctx, sv.Name, tools, apply)
}

// listedTool is a tool as a server's tools/list names it.
type listedTool struct {
	// definition is its definition (mcpwire.ToolDefinition), pinned when
	// it is imported.
	definition  string
	Name        string `json:"name"`
	Description string `json:"description"`
	Annotations struct {
		ReadOnlyHint bool `json:"readOnlyHint"`
	} `json:"annotations"`
}

// maxToolPages bounds the pages of one tools/list walk.
const maxToolPages = 50

// listTools reads every page of sv's tools/list as the gateway itself, in
// its era: statelessly from a 2026-07-28 server; from a 2025 one in a
// session opened for it (initialize, notifications/initialized) and ended
// after. Every page's header bindings are learned on the way.
func (s *MCPGateway) listTools(ctx context.Context, sv domain.Server, era upstreamEra, cred string) ([]listedTool, error) {
	r := ports.MCPRequest{Endpoint: sv.Endpoint, Credential: cred}
	send := func(id int, method string, params map[string]any) (ports.MCPReply, error) {
		msg := map[string]any{"jsonrpc": "2.0", "method": method}
		if era.modern {
			if params == nil {
				params = map[string]any{}
			}
			params["_meta"] = modernMeta(json.RawMessage(`{}`))
			r.ProtocolVersion, r.Method = mcpwire.Modern, method
		}
		if params != nil {
			msg["params"] = params
		}
		var rid json.RawMessage
		if id > 0 {
			rid = json.RawMessage(fmt.Sprint(id))
			msg["id"] = id
		}
		r.Body, _ = json.Marshal(msg)
		rep, err := s.up.Post(ctx, r, rid)
		if err == nil && (rep.Status < 200 || rep.Status > 299) {
			err = fmt.Errorf("%s answered HTTP %d", method, rep.Status)
		}
		return rep, err
	}
	if !era.modern {
		rep, err := send(1, "initialize", map[string]any{"protocolVersion": era.version, "capabilities": map[string]any{}, "clientInfo": gatewayClient})
		if err != nil {
			return nil, err
		}
		r.SessionID, r.ProtocolVersion = rep.SessionID, era.version
		defer func() {
			if r.SessionID != "" {
				r.Body = nil
				_, _ = s.up.Delete(ctx, r)
			}
		}()
		if _, err := send(0, "notifications/initialized", nil); err != nil {
			return nil, err
		}
	}
	var out []listedTool
	cursor := ""
	for page := 2; page < 2+maxToolPages; page++ {
		var params map[string]any
		if cursor != "" {
			params = map[string]any{"cursor": cursor}
		}
		rep, err := send(page, "tools/list", params)
		if err != nil {
			return nil, err
		}
		last := rep.Messages[len(rep.Messages)-1]
		if last.Error != nil {
			return nil, fmt.Errorf("tools/list: %s", last.Error)
		}
		var res struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(last.Result, &res); err != nil {
			return nil, fmt.Errorf("tools/list result: %v", err)
		}
		s.learnTools(sv, last.Result)
		for _, raw := range res.Tools {
			l := listedTool{definition: mcpwire.ToolDefinition(raw)}
			_ = json.Unmarshal(raw, &l) // a tool that is no object has no name: invalid
			out = append(out, l)
		}
		if cursor = res.NextCursor; cursor == "" {
			return out, nil
		}
	}
	return nil, fmt.Errorf("tools/list runs over %d pages", maxToolPages)
}
