package domain

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Limit bounds how many calls a policy rule (the calls it decides) or a
// tool admits in a window, counted per person, agent or session: at most
// Calls in each window of Per, windows aligned to the Unix epoch (an
// hour's from the full hour), counted across instances by the store.
// The zero Limit bounds nothing.
type Limit struct {
	Calls int
	Per   time.Duration
	By    LimitBy
}

// LimitBy is whose calls a limit counts.
type LimitBy string

// Who a limit counts: the person a call is decided for (an agent token's
// session owner), the acting agent, or the session.
const (
	LimitByPerson  LimitBy = "person"
	LimitByAgent   LimitBy = "agent"
	LimitBySession LimitBy = "session"
)

// Bounds of a limit.
const (
	MaxLimitCalls = 1_000_000_000
	MaxLimitPer   = 31 * 24 * time.Hour
)

// ReasonQuotaExceeded: the calls a rule's or tool's limit admits in this
// window are used up; the decision says when the next window starts.
const ReasonQuotaExceeded = "quota_exceeded"

// IsZero reports whether l bounds nothing.
func (l Limit) IsZero() bool { return l == Limit{} }

// ParseLimit reads a limit as the API writes it: calls, a duration per
// ("1h", "30m", whole seconds from 1s to 31 days) and by.
func ParseLimit(calls int, per, by string) (Limit, error) {
	d, err := time.ParseDuration(per)
	if err != nil {
		return Limit{}, fmt.Errorf("limit per %q: want a duration such as 1h or 30m: %w", per, ErrInvalidInput)
	}
	l := Limit{Calls: calls, Per: d, By: LimitBy(by)}
	return l, l.Validate()
}

// Validate checks a limit that is not zero.
func (l Limit) Validate() error {
	if l.IsZero() {
		return nil
	}
	if l.Calls < 1 || l.Calls > MaxLimitCalls {
		return fmt.Errorf("limit calls %d: want 1 to %d: %w", l.Calls, MaxLimitCalls, ErrInvalidInput)
	}
	if l.Per < time.Second || l.Per > MaxLimitPer || l.Per%time.Second != 0 {
		return fmt.Errorf("limit per %s: want whole seconds from 1s to %s: %w", l.Per, MaxLimitPer, ErrInvalidInput)
	}
	switch l.By {
	case LimitByPerson, LimitByAgent, LimitBySession:
		return nil
	}
	return fmt.Errorf("limit by %q: want person, agent or session: %w", l.By, ErrInvalidInput)
}

// String is the limit as a message says it: "100 calls per 1h by agent".
func (l Limit) String() string {
	return fmt.Sprintf("%d calls per %s by %s", l.Calls, PerText(l.Per), l.By)
}

// PerText writes a window's length as ParseLimit reads it, without zero
// units: 1h, 1h30m, 90s.
func PerText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// Window is the window of l that holds t: [start, end).
func (l Limit) Window(t time.Time) (start, end time.Time) {
	per := int64(l.Per / time.Second)
	s := t.Unix()
	s -= ((s % per) + per) % per
	return time.Unix(s, 0).UTC(), time.Unix(s+per, 0).UTC()
}

// QuotaCharge is one call counted against one limit: Key names the
// counter (the rule or tool, the window's length, whose calls).
type QuotaCharge struct {
	Key   string
	Limit Limit
	// Of names what has the limit ("policy rule pol_…", "tool fs.read") and
	// Whose whose calls are counted ("agent agt_…"), for messages.
	Of, Whose string
	// Start and End are the window the call falls in.
	Start, End time.Time
}

// QuotaCharges are the counts a decision d of in takes: the deciding
// rule's limit and the tool's, for a call that is allowed or asks. A call
// denied counts nothing.
func QuotaCharges(in ToolCallInput, d ToolDecision) []QuotaCharge {
	if d.Effect == EffectDeny {
		return nil
	}
	var out []QuotaCharge
	add := func(kind, of, name string, l Limit) {
		if l.IsZero() {
			return
		}
		var whose string
		switch l.By {
		case LimitByPerson:
			whose = in.Principal.Subject
		case LimitByAgent:
			whose = in.Agent.ID
		case LimitBySession:
			whose = in.Session.ID
		}
		start, end := l.Window(in.Now)
		out = append(out, QuotaCharge{Key: kind + ":" + name + "|" + strconv.FormatInt(int64(l.Per/time.Second), 10) + "s|" + string(l.By) + ":" + whose,
			Limit: l, Of: of + " " + name, Whose: string(l.By) + " " + whose, Start: start, End: end})
	}
	if r, ok := in.Policy.Rule(d.Rule); ok {
		add("rule", "policy rule", r.ID, r.Limit)
	}
	if in.Registered != nil {
		add("tool", "tool", in.Registered.Name, in.Registered.Limit)
	}
	return out
}

// QuotaRefusal is the decision of a call whose charge c found its limit
// used up until retry (the window the store counts in ends then).
func QuotaRefusal(d ToolDecision, c QuotaCharge, retry time.Time) ToolDecision {
	return ToolDecision{Effect: EffectDeny, Reason: ReasonQuotaExceeded, Rule: d.Rule, RetryAt: retry,
		Message: fmt.Sprintf("%s admits %s, and %s has made them all in this window: retry at %s", c.Of, c.Limit, c.Whose, retry.UTC().Format(time.RFC3339))}
}

// QuotaUse is a counter of the calls a limit admitted in its window.
type QuotaUse struct {
	Key        string
	Start, End time.Time
	Calls      int
}
