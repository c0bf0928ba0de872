package domain

import (
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Limits are what an agent may do at most, on top of the session's mode:
// which tools (nil Tools: every tool; an empty list: none), whether only
// read-only tools, and whether every call needs approval. The zero value
// limits nothing; Delegate only ever narrows it.
type Limits struct {
	Tools    []string // canonical tool names, sorted, without duplicates
	ReadOnly bool
	Approval bool
}

// MaxAgentDepth bounds sub-agent chains: a root agent has depth 0.
const MaxAgentDepth = 32

// Agent acts in a session. A sub-agent has a Parent and Limits no wider
// than its parent's.
type Agent struct {
	ID string
	// Name is what its maker called it (ValidateAgentName): a label shown
	// beside ID, never an identity; "" for none.
	Name      string
	Session   string
	Parent    string // empty for the session's root agent
	Depth     int
	Limits    Limits
	CreatedBy string
	CreatedAt time.Time
}

// AgentCreation names the creation of a in an audit intent (its name
// quoted: text its maker chose).
func AgentCreation(a Agent) string {
	s := "create agent " + a.ID + " in session " + a.Session
	if a.Name != "" {
		s += " named " + strconv.Quote(a.Name)
	}
	return s
}

// RequestLimits turns what a caller asks for into Limits: a tool list (nil
// for "every tool my parent has") and a mode ("" for the parent's).
func RequestLimits(tools []string, mode string) (Limits, error) {
	var l Limits
	if tools != nil {
		l.Tools = []string{}
		for _, t := range tools {
			c, err := CanonicalToolName(t)
			if err != nil {
				return Limits{}, err
			}
			l.Tools = append(l.Tools, c)
		}
		slices.Sort(l.Tools)
		l.Tools = slices.Compact(l.Tools)
	}
	if mode != "" {
		m, err := ParseSessionMode(mode)
		if err != nil {
			return Limits{}, err
		}
		l.ReadOnly, l.Approval = m.restrictions()
	}
	return l, nil
}

// Delegate returns what a child that asked for req gets from a parent
// with limits p: the intersection of the tool sets and the union of the
// restrictions. It never returns more than p, however the request reads.
func (p Limits) Delegate(req Limits) Limits {
	out := Limits{ReadOnly: p.ReadOnly || req.ReadOnly, Approval: p.Approval || req.Approval}
	switch {
	case p.Tools == nil && req.Tools == nil:
	case p.Tools == nil:
		out.Tools = slices.Clone(req.Tools)
	case req.Tools == nil:
		out.Tools = slices.Clone(p.Tools)
	default:
		out.Tools = []string{}
		for _, t := range req.Tools {
			if hasTool(p.Tools, t) {
				out.Tools = append(out.Tools, t)
			}
		}
	}
	return out
}

// PermitsTool reports whether the tool set includes tool.
func (p Limits) PermitsTool(tool string) bool {
	return p.Tools == nil || hasTool(p.Tools, tool)
}

// hasTool reports whether list holds tool in any case (lists stored before
// names were canonical).
func hasTool(list []string, tool string) bool {
	return slices.ContainsFunc(list, func(t string) bool { return SameTool(t, tool) })
}

// Within reports whether l is no wider than p: every tool l permits p
// permits, and every restriction of p holds in l.
func (l Limits) Within(p Limits) bool {
	if p.Tools != nil {
		if l.Tools == nil {
			return false
		}
		for _, t := range l.Tools {
			if !hasTool(p.Tools, t) {
				return false
			}
		}
	}
	return (l.ReadOnly || !p.ReadOnly) && (l.Approval || !p.Approval)
}

// ChildAgent builds a sub-agent of parent (or, with parent nil, the root
// agent of session) with the requested limits narrowed to the parent's.
func ChildAgent(id, session string, parent *Agent, req Limits, by string, at time.Time) (Agent, error) {
	a := Agent{ID: id, Session: session, Limits: Limits{}.Delegate(req), CreatedBy: by, CreatedAt: at}
	if parent == nil {
		return a, nil
	}
	if parent.Session != session {
		return Agent{}, fmt.Errorf("parent agent %s belongs to another session: %w", parent.ID, ErrInvalidInput)
	}
	if parent.Depth+1 > MaxAgentDepth {
		return Agent{}, fmt.Errorf("sub-agent chains are limited to %d levels: %w", MaxAgentDepth, ErrInvalidInput)
	}
	a.Parent, a.Depth, a.Limits = parent.ID, parent.Depth+1, parent.Limits.Delegate(req)
	return a, nil
}
