package mcpproxy

import (
	"context"
	"encoding/json"
	"fmt"
)

// ListedTool is a tool as a server's tools/list names it.
type ListedTool struct {
	Name        string `json:"name"`
	Annotations struct {
		ReadOnlyHint bool `json:"readOnlyHint"`
	} `json:"annotations"`
}

// maxToolPages bounds the pages of one tools/list walk.
const maxToolPages = 50

// ListTools opens an MCP session at r.Endpoint as the gateway itself
// (initialize, notifications/initialized), reads every page of
// tools/list, and ends the session.
func (u *Upstream) ListTools(ctx context.Context, r Request) ([]ListedTool, error) {
	send := func(id int, method string, params any) (Reply, error) {
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
		rep, err := u.Post(ctx, r, rid)
		if err == nil && (rep.Status < 200 || rep.Status > 299) {
			err = fmt.Errorf("%w: %s answered HTTP %d", ErrUpstream, method, rep.Status)
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
			_, _ = u.Delete(ctx, r)
		}
	}()
	if _, err := send(0, "notifications/initialized", nil); err != nil {
		return nil, err
	}
	var out []ListedTool
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
			return nil, fmt.Errorf("%w: tools/list: %s", ErrUpstream, last.Error)
		}
		var res struct {
			Tools      []ListedTool `json:"tools"`
			NextCursor string       `json:"nextCursor"`
		}
		if err := json.Unmarshal(last.Result, &res); err != nil {
			return nil, fmt.Errorf("%w: tools/list result: %v", ErrUpstream, err)
		}
		out = append(out, res.Tools...)
		if cursor = res.NextCursor; cursor == "" {
			return out, nil
		}
	}
	return nil, fmt.Errorf("%w: tools/list runs over %d pages", ErrUpstream, maxToolPages)
}
