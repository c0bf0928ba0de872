package domain

import (
	"errors"
	"testing"
	"time"
)

func TestParseLimit(t *testing.T) {
	for _, tc := range []struct {
		calls   int
		per, by string
		ok      bool
		text    string
	}{
		{100, "1h", "agent", true, "100 calls per 1h by agent"},
		{5, "90s", "person", true, "5 calls per 1m30s by person"},
		{1, "24h", "session", true, "1 calls per 24h by session"},
		{0, "1h", "agent", false, ""},
		{5, "1.5s", "agent", false, ""},
		{5, "32d", "agent", false, ""},
		{5, "800h", "agent", false, ""},
		{5, "1h", "team", false, ""},
	} {
		l, err := ParseLimit(tc.calls, tc.per, tc.by)
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrInvalidInput) || tc.ok && l.String() != tc.text {
			t.Errorf("%d %s %s: %v %v, want ok %v %q", tc.calls, tc.per, tc.by, l, err, tc.ok, tc.text)
		}
	}
}

// TestQuotaCharges: the deciding rule's limit and the tool's, each in the
// window that holds the call, keyed by whose calls they count.
func TestQuotaCharges(t *testing.T) {
	hour := Limit{Calls: 3, Per: time.Hour, By: LimitByAgent}
	day := Limit{Calls: 10, Per: 24 * time.Hour, By: LimitBySession}
	ix := NewPolicyIndex([]PolicyRule{{ID: "r1", Effect: EffectAllow, Tool: "*", Scope: ScopeRole, Value: "USER", Limit: hour}})
	in := ToolCallInput{Principal: Principal{Subject: "uma"}, Session: Session{ID: "s1"}, Agent: Agent{ID: "a1"}, Policy: ix,
		Registered: &Tool{Name: "fs.read", Limit: day}, Now: time.Date(2026, 11, 28, 14, 30, 5, 0, time.UTC)}
	got := QuotaCharges(in, ToolDecision{Effect: EffectAllow, Rule: "r1"})
	if len(got) != 2 || got[0].Key != "rule:r1|3600s|agent:a1" || got[1].Key != "tool:fs.read|86400s|session:s1" ||
		!got[0].Start.Equal(time.Date(2026, 11, 28, 14, 0, 0, 0, time.UTC)) || !got[0].End.Equal(time.Date(2026, 11, 28, 15, 0, 0, 0, time.UTC)) ||
		!got[1].Start.Equal(time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("charges = %+v", got)
	}
	if got := QuotaCharges(in, ToolDecision{Effect: EffectDeny, Rule: "r1"}); got != nil {
		t.Errorf("a denied call counts %+v, want nothing", got)
	}
	d := QuotaRefusal(ToolDecision{Effect: EffectAllow, Rule: "r1"}, QuotaCharges(in, ToolDecision{Effect: EffectAllow, Rule: "r1"})[0], got0End(in))
	if d.Effect != EffectDeny || d.Reason != ReasonQuotaExceeded || d.RetryAt.IsZero() ||
		d.Message != "policy rule r1 admits 3 calls per 1h by agent, and agent a1 has made them all in this window: retry at 2026-11-28T15:00:00Z" {
		t.Errorf("refusal = %+v", d)
	}
}

func got0End(in ToolCallInput) time.Time {
	_, end := Limit{Per: time.Hour}.Window(in.Now)
	return end
}
