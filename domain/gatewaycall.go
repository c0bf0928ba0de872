package domain

import (
	"strconv"
	"strings"
	"time"
)

// Reason codes of the MCP gateway's own refusals and outcomes (a
// decision's codes are the tool-call reasons).
const (
	ReasonGatewayAgentNamed   = "gateway_agent_required"
	ReasonGatewayOtherServer  = "token_audience_other_server"
	ReasonGatewayResource     = "token_audience_not_gateway_resource"
	ReasonGatewayMethod       = "gateway_method_not_offered"
	ReasonGatewayRejected     = "approval_rejected"
	ReasonGatewayTimeout      = "approval_timeout"
	ReasonGatewayWithdrawn    = "approval_withdrawn"
	ReasonGatewayUsed         = "approval_used"
	ReasonGatewayState        = "approval_state_invalid"
	ReasonGatewayUpstream     = "upstream_failed"
	ReasonGatewayMalformed    = "jsonrpc_malformed"
	ReasonGatewayBatch        = "jsonrpc_batch"
	ReasonGatewayResponse     = "jsonrpc_response_not_asked"
	ReasonGatewaySession      = "mcp_session_unknown"
	ReasonGatewayProtoVersion = "mcp_protocol_version_unsupported"
	// ReasonGatewayHeaderMismatch: an MCP 2026-07-28 request's headers
	// (MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Param-*) do not say
	// what its body says.
	ReasonGatewayHeaderMismatch = "mcp_header_mismatch"
)

// GatewayCall is what the audit record of one MCP gateway request says of
// it, after the access decision: the message, the server, who called for
// which agent, the tool and its arguments' hash, the decision and the
// upstream's answer. The console reads it back (ParseGatewayCall).
type GatewayCall struct {
	Method, Server string
	// Chain is who called: "user → agent → sub-agent" (an agent token), or
	// "subject (method) → agent".
	Chain string
	Tool  string
	// Args is the SHA-256 of the arguments' canonical JSON (RFC 8785).
	Args, Call, Decision, Reason string
	// ArgsText is the canonical arguments, bounded, when the operator
	// opted in.
	ArgsText string
	// Upstream is the server's HTTP status, -1 for no answer, 0 when the
	// call never reached it; Duration is how long the server took.
	Upstream int
	Duration time.Duration
	// Dropped counts the server's messages not relayed.
	Dropped int
	// Credential says whose token went upstream when it was a person's
	// own ("connection of alice (refreshed)", "token exchange for
	// alice"); "" for the gateway's credential. Never a token.
	Credential string
	// Definitions says what a tools/list found of the tools' pinned
	// definitions: pinned, changed (hidden), not registered (hidden).
	Definitions string
}

// gatewayCallMark starts a GatewayCall in an audit reason.
const gatewayCallMark = "mcp "

// String is the record's text. The caller's bytes (a tool name as sent,
// a subject) have ";" written as "\x3b", and the arguments come last,
// so that nothing a caller sends can be read back as another field.
func (n GatewayCall) String() string {
	// Written field by field, without fmt, into a buffer on the stack:
	// the gateway writes one per request.
	var buf [512]byte
	b := append(buf[:0], gatewayCallMark...)
	b = append(append(append(append(b, n.Method...), " server "...), n.Server...), "; chain "...)
	b = appendNoteValue(b, n.Chain)
	if n.Tool != "" {
		b = appendNoteValue(append(b, "; tool "...), n.Tool)
	}
	for _, kv := range [...]struct{ key, value string }{{"; args_sha256 ", n.Args}, {"; call ", n.Call}, {"; decision ", n.Decision}, {"; reason ", n.Reason}} {
		if kv.value != "" {
			b = append(append(b, kv.key...), kv.value...)
		}
	}
	if n.Credential != "" {
		b = appendNoteValue(append(b, "; credential "...), n.Credential)
	}
	if n.Upstream != 0 {
		b = strconv.AppendInt(append(b, "; upstream status "...), int64(n.Upstream), 10)
		b = append(append(b, " in "...), n.Duration.Round(time.Microsecond).String()...)
	}
	if n.Dropped > 0 {
		b = append(strconv.AppendInt(append(b, "; "...), int64(n.Dropped), 10), " upstream messages dropped"...)
	}
	if n.Definitions != "" {
		b = appendNoteValue(append(b, "; definitions "...), n.Definitions)
	}
	if n.ArgsText != "" {
		b = append(append(b, "; arguments "...), n.ArgsText...)
	}
	return string(b)
}

// appendNoteValue appends s with each ";" written as "\x3b".
func appendNoteValue(b []byte, s string) []byte {
	for {
		i := strings.IndexByte(s, ';')
		if i < 0 {
			return append(b, s...)
		}
		b = append(append(b, s[:i]...), `\x3b`...)
		s = s[i+1:]
	}
}

// ParseGatewayCall reads the GatewayCall an audit reason carries (after
// the decision's own reason, or a held call's "held tool call released: ");
// false when it carries none. The arguments, when recorded, are left out.
func ParseGatewayCall(reason string) (GatewayCall, bool) {
	i := strings.Index(reason, "; "+gatewayCallMark)
	if j := strings.Index(reason, ": "+gatewayCallMark); i < 0 || (j >= 0 && j < i) {
		i = j
	}
	switch {
	case strings.HasPrefix(reason, gatewayCallMark):
	case i >= 0:
		reason = reason[i+2:]
	default:
		return GatewayCall{}, false
	}
	reason, _, _ = strings.Cut(reason, "; arguments ")
	parts := strings.Split(reason, "; ")
	head := strings.TrimPrefix(parts[0], gatewayCallMark)
	method, server, ok := strings.Cut(head, " server ")
	if !ok {
		return GatewayCall{}, false
	}
	n := GatewayCall{Method: method, Server: server}
	for _, p := range parts[1:] {
		key, val, _ := strings.Cut(p, " ")
		switch key {
		case "chain":
			n.Chain = val
		case "tool":
			n.Tool = val
		case "args_sha256":
			n.Args = val
		case "call":
			n.Call = val
		case "decision":
			n.Decision = val
		case "reason":
			n.Reason = val
		case "credential":
			n.Credential = val
		case "definitions":
			n.Definitions = val
		case "upstream":
			status, dur, _ := strings.Cut(strings.TrimPrefix(val, "status "), " in ")
			n.Upstream, _ = strconv.Atoi(status)
			n.Duration, _ = time.ParseDuration(dur)
		default:
			if d, ok := strings.CutSuffix(p, " upstream messages dropped"); ok {
				n.Dropped, _ = strconv.Atoi(d)
			}
		}
	}
	return n, true
}
