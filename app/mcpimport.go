package app

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentauth/agentauth/domain"
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
// the gateway with its credential) and compares them with the registry;
// with apply it registers the new ones (Gateway.ImportTools).
func (s *MCPGateway) ImportTools(ctx context.Context, server string, apply bool) (ToolsDiff, error) {
	sv, err := s.decide.Server(ctx, server)
	if err != nil {
		return ToolsDiff{}, err
	}
	cred, err := s.creds.Credential(ctx, sv)
	if err != nil {
		return ToolsDiff{}, &MCPUpstreamFailed{Message: "the gateway has no credential for server " + sv.Name, Err: err}
	}
	ctx2, cancel := context.WithTimeout(ctx, s.set.CallTimeout)
	defer cancel()
	listed, err := s.listTools(ctx2, ports.MCPRequest{Endpoint: sv.Endpoint, Credential: cred})
	if err != nil {
		return ToolsDiff{}, &MCPUpstreamFailed{Message: "server " + sv.Name + " did not list its tools: " + upstreamSummary(err), Err: err}
	}
	tools := make([]domain.Tool, len(listed))
	for i, l := range listed {
		tools[i] = domain.Tool{Name: l.Name, ReadOnly: l.Annotations.ReadOnlyHint, Description: l.Description}
	}
	return s.decide.ImportTools(ctx, sv.Name, tools, apply)
}

// listedTool is a tool as a server's tools/list names it.
type listedTool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Annotations struct {
		ReadOnlyHint bool `json:"readOnlyHint"`
	} `json:"annotations"`
}

// maxToolPages bounds the pages of one tools/list walk.
const maxToolPages = 50

// listTools opens an MCP session at r.Endpoint as the gateway itself
// (initialize, notifications/initialized), reads every page of
// tools/list, and ends the session.
func (s *MCPGateway) listTools(ctx context.Context, r ports.MCPRequest) ([]listedTool, error) {
	send := func(id int, method string, params any) (ports.MCPReply, error) {
		msg := map[string]any{"jsonrpc": "2.0", "method": method}
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
	rep, err := send(1, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]string{"name": "agentauth-gateway", "version": "1"}})
	if err != nil {
		return nil, err
	}
	r.SessionID, r.ProtocolVersion = rep.SessionID, "2025-06-18"
	defer func() {
		if r.SessionID != "" {
			_, _ = s.up.Delete(ctx, r)
		}
	}()
	if _, err := send(0, "notifications/initialized", nil); err != nil {
		return nil, err
	}
	var out []listedTool
	cursor := ""
	for page := 2; page < 2+maxToolPages; page++ {
		var params any
		if cursor != "" {
			params = map[string]string{"cursor": cursor}
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
			Tools      []listedTool `json:"tools"`
			NextCursor string       `json:"nextCursor"`
		}
		if err := json.Unmarshal(last.Result, &res); err != nil {
			return nil, fmt.Errorf("tools/list result: %v", err)
		}
		out = append(out, res.Tools...)
		if cursor = res.NextCursor; cursor == "" {
			return out, nil
		}
	}
	return nil, fmt.Errorf("tools/list runs over %d pages", maxToolPages)
}
