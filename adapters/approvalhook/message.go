package approvalhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentauth/agentauth/domain"
)

// message is what the webhook receives: the Standard Webhooks shape (type,
// timestamp, data) and a one-paragraph text, so that a chat tool's incoming
// webhook (Slack, Mattermost, Google Chat, Teams) shows it as it is.
type message struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Text      string    `json:"text"`
	Data      data      `json:"data"`
}

type data struct {
	Call            string          `json:"call"`
	Status          string          `json:"status"`
	Tool            string          `json:"tool"`
	ToolDescription string          `json:"tool_description,omitempty"`
	Arguments       json.RawMessage `json:"arguments"`
	ArgsSHA256      string          `json:"args_sha256"`
	Session         session         `json:"session"`
	AgentChain      []string        `json:"agent_chain"`
	RequestedBy     string          `json:"requested_by"`
	RequestedAt     time.Time       `json:"requested_at"`
	Rule            string          `json:"rule,omitempty"`
	Reason          string          `json:"reason"`
	Message         string          `json:"message"`
	ResolvedBy      string          `json:"resolved_by,omitempty"`
	ResolvedAt      *time.Time      `json:"resolved_at,omitempty"`
	ConsoleURL      string          `json:"console_url"`
	// The names agentauth knows (labels beside the ids, never identities;
	// absent when none): the chain's agents in its order ("" for one
	// without), who asked and who resolved.
	AgentChainNames []string `json:"agent_chain_names,omitempty"`
	RequestedByName string   `json:"requested_by_name,omitempty"`
	ResolvedByName  string   `json:"resolved_by_name,omitempty"`
}

type session struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Owner string `json:"owner"`
	// OwnerName names the owner where known.
	OwnerName string `json:"owner_name,omitempty"`
	Project   string `json:"project,omitempty"`
	Mode      string `json:"mode"`
}

// textArguments bounds the arguments the text quotes; data holds them all.
const textArguments = 600

// typeOf is the event type of a call's status: approval.requested while it
// waits, else approval.<status> (approved, rejected).
func typeOf(s domain.ToolCallStatus) string {
	if s == domain.CallPending {
		return "approval.requested"
	}
	return "approval." + string(s)
}

func (n *Notifier) message(a domain.Approval, now time.Time) message {
	c := a.Call
	d := data{Call: c.ID, Status: string(c.Status), Tool: c.Tool, Arguments: c.Arguments, ArgsSHA256: c.ArgsHash,
		Session: session{ID: a.Session.ID, Title: a.Session.Title, Owner: a.Session.Owner, OwnerName: a.Names[a.Session.Owner],
			Project: a.Session.Project, Mode: string(a.Session.Mode)},
		RequestedByName: a.Names[c.RequestedBy], ResolvedByName: a.Names[c.ResolvedBy],
		AgentChain: a.Chain, RequestedBy: c.RequestedBy, RequestedAt: c.CreatedAt.UTC(), Rule: c.Decision.Rule, Reason: c.Decision.Reason,
		Message: c.Decision.Message, ResolvedBy: c.ResolvedBy, ConsoleURL: strings.TrimSuffix(n.set.ConsoleURL, "/") + "/console/approvals#call-" + c.ID}
	if d.Arguments == nil {
		d.Arguments = json.RawMessage("null")
	}
	if d.AgentChain == nil {
		d.AgentChain = []string{c.Agent}
	}
	if slices.ContainsFunc(a.ChainNames, func(n string) bool { return n != "" }) {
		d.AgentChainNames = a.ChainNames
	}
	if a.Tool != nil {
		d.ToolDescription = a.Tool.Description
	}
	if !c.ResolvedAt.IsZero() {
		at := c.ResolvedAt.UTC()
		d.ResolvedAt = &at
	}
	return message{Type: typeOf(c.Status), Timestamp: now, Text: text(d), Data: d}
}

// text is the notice in one paragraph for a chat tool. Every value a
// caller chose (names, titles, arguments) is quoted as a JSON string in a
// code span, with the characters chat tools read as markup (< > & and `)
// escaped the JSON way, so none of it renders as a link or formatting.
func text(d data) string {
	var b strings.Builder
	if d.Status == string(domain.CallPending) {
		fmt.Fprintf(&b, "agentauth: %s asks to run %s in session %s (owner %s), agent chain %s.", quoted(d.RequestedBy), quoted(d.Tool),
			quoted(d.Session.Title), quoted(d.Session.Owner), quoted(strings.Join(d.AgentChain, " → ")))
		if d.Rule != "" {
			fmt.Fprintf(&b, " Rule %s asks approval.", quoted(d.Rule))
		} else {
			fmt.Fprintf(&b, " Approval asked: %s.", quoted(d.Message))
		}
		args := jsonSafe(d.Arguments)
		if len(args) > textArguments {
			fmt.Fprintf(&b, " Arguments (the first %d of %d bytes; all of them in the console): `%s…`", textArguments, len(args), cutRunes(args, textArguments))
		} else {
			fmt.Fprintf(&b, " Arguments: `%s`", args)
		}
		fmt.Fprintf(&b, ". Approve or reject: %s", d.ConsoleURL)
		return b.String()
	}
	fmt.Fprintf(&b, "agentauth: tool call %s (%s in session %s) %s", quoted(d.Call), quoted(d.Tool), quoted(d.Session.Title), d.Status)
	if d.ResolvedBy != "" {
		fmt.Fprintf(&b, " by %s", quoted(d.ResolvedBy))
	}
	b.WriteString(".")
	return b.String()
}

// quoted is s as a JSON string in a code span.
func quoted(s string) string {
	q, _ := json.Marshal(s)
	return "`" + jsonSafe(q) + "`"
}

// jsonSafe writes < > & and ` of a JSON text as \u escapes: the same JSON,
// which no chat tool reads as markup. They occur only inside strings.
func jsonSafe(j []byte) string { return markup.Replace(string(bytes.TrimSpace(j))) }

var markup = strings.NewReplacer("<", `\u003c`, ">", `\u003e`, "&", `\u0026`, "`", `\u0060`)

// cutRunes is s cut to at most n bytes at a character's end.
func cutRunes(s string, n int) string {
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
