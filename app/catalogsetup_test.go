package app_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/golang/mock/gomock"

	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// TestCatalogSetUp: a server's set-up reads its tools (by name, not those
// of other servers) and the rules whose pattern matches one of them,
// newest first; none for a server without tools; an unknown server is
// not found.
func TestCatalogSetUp(t *testing.T) {
	notes := domain.Server{Name: "notes", URL: "http://gw/mcp/notes", Endpoint: "http://up/mcp"}
	tools := []domain.Tool{{Name: "notes.write", Server: "notes"}, {Name: "fs.read", Server: "fs"}, {Name: "notes.read", Server: "notes", ReadOnly: true}}
	rule := func(id, pattern string) domain.PolicyRule {
		return domain.PolicyRule{ID: id, Effect: domain.EffectAllow, Tool: pattern, Scope: domain.ScopeRole, Value: "USER"}
	}
	stored := []domain.PolicyRule{rule("r4", "fs.*"), rule("r3", "notes.write"), rule("r2", "*"), rule("r1", "notes.r*")} // newest first, as the store lists
	tests := []struct {
		name      string
		server    string
		tools     []domain.Tool
		wantTools []string
		wantRules []string // id: the tools it matches
		wantErr   error
	}{
		{"its tools and their rules", "notes", tools, []string{"notes.read", "notes.write"}, []string{"r3: [notes.write]", "r2: [notes.read notes.write]", "r1: [notes.read]"}, nil},
		{"no tools, no rules", "notes", tools[1:2], nil, nil, nil},
		{"unknown", "nope", tools, nil, nil, domain.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			if tt.wantErr != nil {
				f.catalog.EXPECT().GetServer(gomock.Any(), tt.server).Return(domain.Server{}, domain.ErrNotFound)
			} else {
				f.catalog.EXPECT().GetServer(gomock.Any(), tt.server).Return(notes, nil)
				f.catalog.EXPECT().ListTools(gomock.Any(), ports.Page{}).Return(tt.tools, nil)
				f.policies.EXPECT().PolicyVersion(gomock.Any()).Return(int64(1), nil)
				f.policies.EXPECT().ListPolicies(gomock.Any(), ports.Page{}).Return(append([]domain.PolicyRule(nil), stored...), nil)
			}
			c := app.NewCatalog(f.catalog, app.NewPolicyRules(f.policies), f.projects, f.authz, now)
			got, err := c.SetUp(context.Background(), tt.server)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("SetUp: %v, want %v", err, tt.wantErr)
			}
			var gotTools, gotRules []string
			for _, tl := range got.Tools {
				gotTools = append(gotTools, tl.Name)
			}
			for _, r := range got.Rules {
				gotRules = append(gotRules, fmt.Sprintf("%s: %v", r.Rule.ID, r.Tools))
			}
			if !reflect.DeepEqual(gotTools, tt.wantTools) || !reflect.DeepEqual(gotRules, tt.wantRules) {
				t.Errorf("tools %v rules %v, want %v %v", gotTools, gotRules, tt.wantTools, tt.wantRules)
			}
		})
	}
}
