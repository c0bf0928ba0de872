package app_test

import (
	"context"
	"errors"
	"testing"

	"github.com/golang/mock/gomock"

	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
	"github.com/agentauth/agentauth/ports/mocks"
)

// TestPolicyRulesCompileOncePerVersion: the rules are read and compiled
// when the policy version moves, and only then; every use reads the version.
func TestPolicyRulesCompileOncePerVersion(t *testing.T) {
	allow := domain.PolicyRule{ID: "allow", Effect: domain.EffectAllow, Tool: "*", Scope: domain.ScopeRole, Value: "USER"}
	deny := domain.PolicyRule{ID: "deny", Effect: domain.EffectDeny, Tool: "fs.*", Scope: domain.ScopeSubject, Value: "uma"}
	subj := domain.Subject{Subject: "uma", Roles: []domain.Role{domain.RoleUser}}
	store := mocks.NewMockPolicyStore(gomock.NewController(t))
	ctx := context.Background()
	gomock.InOrder(
		store.EXPECT().PolicyVersion(gomock.Any()).Return(int64(1), nil),
		store.EXPECT().ListPolicies(gomock.Any(), ports.Page{}).Return([]domain.PolicyRule{allow}, nil),
		store.EXPECT().PolicyVersion(gomock.Any()).Return(int64(1), nil).Times(3),
		store.EXPECT().PolicyVersion(gomock.Any()).Return(int64(2), nil),
		store.EXPECT().ListPolicies(gomock.Any(), ports.Page{}).Return([]domain.PolicyRule{allow, deny}, nil),
		store.EXPECT().PolicyVersion(gomock.Any()).Return(int64(2), nil),
	)
	rules := app.NewPolicyRules(store)
	steps := []domain.PolicyOutcome{
		{Effect: domain.EffectAllow, Rule: "allow"}, // compiled
		{Effect: domain.EffectAllow, Rule: "allow"}, // version unchanged: no read
		{Effect: domain.EffectAllow, Rule: "allow"},
		{Effect: domain.EffectAllow, Rule: "allow"},
		{Effect: domain.EffectDeny, Rule: "deny"}, // version moved: recompiled
		{Effect: domain.EffectDeny, Rule: "deny"},
	}
	for i, want := range steps {
		ix, err := rules.Index(ctx)
		if err != nil {
			t.Fatalf("use %d: %v", i, err)
		}
		if got := ix.Evaluate(subj, "fs.read"); got != want {
			t.Errorf("use %d: %+v, want %+v", i, got, want)
		}
	}
}

// TestPolicyRulesFailClosed: when the version or the rules cannot be read,
// there is no index to decide with, whatever was compiled before.
func TestPolicyRulesFailClosed(t *testing.T) {
	down := errors.New("database down")
	tests := []struct {
		name   string
		expect func(*mocks.MockPolicyStore)
	}{
		{"version unreadable", func(s *mocks.MockPolicyStore) {
			s.EXPECT().PolicyVersion(gomock.Any()).Return(int64(0), down)
		}},
		{"rules unreadable", func(s *mocks.MockPolicyStore) {
			s.EXPECT().PolicyVersion(gomock.Any()).Return(int64(7), nil)
			s.EXPECT().ListPolicies(gomock.Any(), ports.Page{}).Return(nil, down)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := mocks.NewMockPolicyStore(gomock.NewController(t))
			tt.expect(store)
			if ix, err := app.NewPolicyRules(store).Index(context.Background()); !errors.Is(err, down) || ix != nil {
				t.Errorf("got %v, %v; want the store's error and no index", ix, err)
			}
		})
	}
}
