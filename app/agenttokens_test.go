package app

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/golang/mock/gomock"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
	"github.com/agentauth/agentauth/ports/mocks"
)

// TestAgentChain: the chain of an agent is read root first; a stored chain
// that loops (a corrupt store) is refused with its reason code, never
// walked for ever.
func TestAgentChain(t *testing.T) {
	tests := []struct {
		name   string
		agents map[string]domain.Agent
		want   []string
		code   string
	}{
		{"root", map[string]domain.Agent{"a": {ID: "a", Session: "s"}}, []string{"a"}, ""},
		{"two levels", map[string]domain.Agent{"a": {ID: "a", Session: "s"}, "b": {ID: "b", Session: "s", Parent: "a"},
			"c": {ID: "c", Session: "s", Parent: "b"}}, []string{"a", "b", "c"}, ""},
		{"loop", map[string]domain.Agent{"b": {ID: "b", Session: "s", Parent: "c"}, "c": {ID: "c", Session: "s", Parent: "b"}}, nil, domain.ReasonTokenChainLoop},
	}
	for _, tt := range tests {
		store := mocks.NewMockAgentStore(gomock.NewController(t))
		store.EXPECT().GetAgent(gomock.Any(), gomock.Any()).DoAndReturn(func(_ context.Context, id string) (domain.Agent, error) {
			if a, ok := tt.agents[id]; ok {
				return a, nil
			}
			return domain.Agent{}, domain.ErrNotFound
		}).AnyTimes()
		leaf := tt.want
		start := "c"
		if len(leaf) > 0 {
			start = leaf[len(leaf)-1]
		}
		_, chain, err := (&AgentTokens{agents: store}).chain(context.Background(), "s", start)
		var tr *domain.TokenRefusal
		switch {
		case tt.code == "" && (err != nil || len(chain) != len(tt.want)):
			t.Errorf("%s: %v %v, want %v", tt.name, chain, err, tt.want)
		case tt.code != "" && (!errors.As(err, &tr) || tr.Code != tt.code):
			t.Errorf("%s: %v %v, want %s", tt.name, chain, err, tt.code)
		}
		for i := range tt.want {
			if tt.code == "" && chain[i] != tt.want[i] {
				t.Errorf("%s: %v, want %v", tt.name, chain, tt.want)
				break
			}
		}
	}
}

type fixedClock struct{ at time.Time }

func (c fixedClock) Now() time.Time { return c.at }

// TestExchangeOfAParentAboutToExpire: verification tolerates clock skew,
// so a parent token may verify in its last second or just after it; the
// exchange must not sign a child that is born expired.
func TestExchangeOfAParentAboutToExpire(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	c := gomock.NewController(t)
	signer, sessions, agents, policies := mocks.NewMockAgentTokenSigner(c), mocks.NewMockSessionStore(c), mocks.NewMockAgentStore(c), mocks.NewMockPolicyStore(c)
	for _, left := range []time.Duration{500 * time.Millisecond, -10 * time.Second} {
		parent := domain.AgentGrant{ID: "p", Subject: "uma", Chain: []string{"a"}, Audience: "fs", Session: "s", Mode: domain.ModeAuto,
			Tools: []string{"fs.read"}, IssuedAt: now.Add(-time.Minute), Expires: now.Add(left)}
		signer.EXPECT().Verify(gomock.Any(), "tok").Return(parent, nil)
		sessions.EXPECT().GetSession(gomock.Any(), "s").Return(domain.Session{ID: "s", Owner: "uma", Mode: domain.ModeAuto, State: domain.SessionActive,
			OwnerRoles: []domain.Role{domain.RoleUser}}, nil)
		agents.EXPECT().GetAgent(gomock.Any(), "a").Return(domain.Agent{ID: "a", Session: "s"}, nil)
		policies.EXPECT().PolicyVersion(gomock.Any()).Return(int64(1), nil).AnyTimes()
		policies.EXPECT().ListPolicies(gomock.Any(), ports.Page{}).Return([]domain.PolicyRule{
			{ID: "r", Effect: domain.EffectAllow, Tool: "*", Scope: domain.ScopeRole, Value: "USER"}}, nil).AnyTimes()
		authz, _ := domain.NewAuthorizer(nil)
		x := &AgentTokens{store: sessions, agents: agents, policies: NewPolicyRules(policies), authz: authz, signer: signer, clock: fixedClock{now}}
		_, err := x.Exchange(context.Background(), ExchangeRequest{SubjectToken: "tok"})
		var tr *domain.TokenRefusal
		if !errors.As(err, &tr) || tr.Code != domain.ReasonTokenExpired || !errors.Is(err, domain.ErrUnauthenticated) {
			t.Errorf("parent with %v left: %v, want %s", left, err, domain.ReasonTokenExpired)
		}
	}
}
