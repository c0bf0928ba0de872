package domain

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

func TestDecideDefaultMatrix(t *testing.T) {
	a, err := NewAuthorizer(nil)
	if err != nil {
		t.Fatal(err)
	}
	for role, grants := range DefaultGrants() {
		for _, p := range AllPermissions() {
			want := slices.Contains(grants, p)
			if got := a.Decide([]Role{role}, p).Allowed; got != want {
				t.Errorf("Decide(%s, %s) = %v, want %v", role, p, got, want)
			}
		}
	}
}

func TestDecideCases(t *testing.T) {
	a, err := NewAuthorizer([]CustomRole{{Name: "OPS", Permissions: []Permission{PermMetricsRead}}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		roles      []Role
		need       Permission
		wantAllow  bool
		wantReason string
	}{
		{"admin may write settings", []Role{RoleAdmin}, PermSettingsWrite, true, "role ADMIN grants settings:write"},
		{"user may not write policies", []Role{RoleUser}, PermPoliciesWrite, false, "role USER lacks policies:write"},
		{"auditor reads audit", []Role{RoleAuditor}, PermAuditRead, true, "role AUDITOR grants audit:read"},
		{"lead may not read audit", []Role{RoleLead}, PermAuditRead, false, "role LEAD lacks audit:read"},
		{"any role of several grants", []Role{RoleUser, RoleAuditor}, PermAuditRead, true, "role AUDITOR grants audit:read"},
		{"several roles lack", []Role{RoleUser, RoleLead}, PermSettingsRead, false, "roles USER, LEAD lack settings:read"},
		{"no role grants nothing", nil, PermMeRead, false, "no role grants me:read"},
		{"unknown role grants nothing", []Role{"GHOST"}, PermMeRead, false, "role GHOST lacks me:read"},
		{"unknown permission is refused even for admin", []Role{RoleAdmin}, "weird:thing", false, "role ADMIN lacks weird:thing"},
		{"custom role grants its permission", []Role{"OPS"}, PermMetricsRead, true, "role OPS grants metrics:read"},
		{"custom role grants nothing else", []Role{"OPS"}, PermMeRead, false, "role OPS lacks me:read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := a.Decide(tt.roles, tt.need)
			if d.Allowed != tt.wantAllow || d.Reason() != tt.wantReason {
				t.Errorf("got (%v, %q), want (%v, %q)", d.Allowed, d.Reason(), tt.wantAllow, tt.wantReason)
			}
		})
	}
}

func TestNewAuthorizerCustomRoles(t *testing.T) {
	tests := []struct {
		name    string
		custom  []CustomRole
		wantErr bool
	}{
		{"extends a built-in role", []CustomRole{{Name: "SRE", Extends: RoleUser, Permissions: []Permission{PermMetricsRead}}}, false},
		{"redefines a built-in role", []CustomRole{{Name: RoleAdmin}}, true},
		{"defined twice", []CustomRole{{Name: "SRE"}, {Name: "SRE"}}, true},
		{"extends an unknown role", []CustomRole{{Name: "SRE", Extends: "OPS"}}, true},
		{"unknown permission", []CustomRole{{Name: "SRE", Permissions: []Permission{"sessions:fly"}}}, true},
		{"empty name", []CustomRole{{Name: ""}}, true},
		{"lower-case name", []CustomRole{{Name: "sre"}}, true},
		{"name starting with a digit", []CustomRole{{Name: "9SRE"}}, true},
		{"name with digits, dash and underscore", []CustomRole{{Name: "SRE_2-B"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewAuthorizer(tt.custom)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrInvalidInput) {
				t.Errorf("err = %v, want it to wrap ErrInvalidInput", err)
			}
		})
	}
}

func TestAuthorizerExtendsAndLists(t *testing.T) {
	a, err := NewAuthorizer([]CustomRole{{Name: "SRE", Extends: RoleUser, Permissions: []Permission{PermMetricsRead}}})
	if err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(DefaultGrants()[RoleUser]), PermMetricsRead)
	if got := a.Permissions([]Role{"SRE"}); !slices.Equal(got, want) {
		t.Errorf("Permissions(SRE) = %v, want %v", got, want)
	}
	if got, want := a.Roles(), []Role{RoleAdmin, RoleUser, RoleLead, RoleAuditor, "SRE"}; !slices.Equal(got, want) {
		t.Errorf("Roles() = %v, want %v", got, want)
	}
	if !a.Knows("SRE") || a.Knows("GHOST") {
		t.Errorf("Knows: SRE should be known, GHOST not")
	}
	if got := a.Permissions(nil); len(got) != 0 {
		t.Errorf("Permissions(nil) = %v, want none", got)
	}
}

func TestPermissionParts(t *testing.T) {
	tests := []struct {
		in               string
		wantErr          bool
		resource, action string
	}{
		{"sessions:write", false, "sessions", "write"},
		{" audit:read ", false, "audit", "read"},
		{"sessions", true, "", ""},
		{"", true, "", ""},
	}
	for _, tt := range tests {
		p, err := ParsePermission(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParsePermission(%q) err = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if err == nil && (p.Resource() != tt.resource || p.Action() != tt.action) {
			t.Errorf("ParsePermission(%q) = %s:%s, want %s:%s", tt.in, p.Resource(), p.Action(), tt.resource, tt.action)
		}
	}
}

func TestAccessDeniedIsForbidden(t *testing.T) {
	err := error(&AccessDenied{Decision: Decision{Permission: PermAuditRead, Roles: []Role{RoleUser}}})
	if !errors.Is(err, ErrForbidden) {
		t.Error("AccessDenied should match ErrForbidden")
	}
	if errors.Is(err, ErrNotFound) {
		t.Error("AccessDenied should not match ErrNotFound")
	}
	if got, want := err.Error(), "role USER lacks audit:read"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestNotVisibleReadsAsNotFound(t *testing.T) {
	err := fmt.Errorf("session s1: %w", ErrNotVisible)
	if !errors.Is(err, ErrNotFound) || !errors.Is(err, ErrNotVisible) || errors.Is(err, ErrForbidden) {
		t.Errorf("%v: want it to match ErrNotFound and ErrNotVisible, not ErrForbidden", err)
	}
	if ErrNotVisible.Error() != ErrNotFound.Error() {
		t.Errorf("ErrNotVisible reads %q, want %q: the answer must not tell the two apart", ErrNotVisible, ErrNotFound)
	}
}

func TestPrincipalHas(t *testing.T) {
	p := Principal{Roles: []Role{RoleLead}}
	if !p.Has(RoleLead) || p.Has(RoleAdmin) {
		t.Errorf("Has: got LEAD=%v ADMIN=%v, want true false", p.Has(RoleLead), p.Has(RoleAdmin))
	}
	if !RoleAuditor.IsBuiltin() || Role("OPS").IsBuiltin() {
		t.Error("IsBuiltin: AUDITOR should be built in, OPS not")
	}
}

// TestPermissionsForDebug: a built-in debug key makes no managed keys (they
// would outlive debug mode), so what it may do does not list keys:write.
func TestPermissionsForDebug(t *testing.T) {
	a, _ := NewAuthorizer(nil)
	for _, role := range []Role{RoleAdmin, RoleUser, RoleLead} {
		debug := a.PermissionsFor(Principal{Subject: "debug", Roles: []Role{role}, Method: MethodDebug})
		if slices.Contains(debug, PermKeysWrite) {
			t.Errorf("debug %s lists %s: %v", role, PermKeysWrite, debug)
		}
		if key := a.PermissionsFor(Principal{Subject: "k", Roles: []Role{role}, Method: MethodAPIKey}); !slices.Contains(key, PermKeysWrite) {
			t.Errorf("API key %s lacks %s: %v", role, PermKeysWrite, key)
		}
	}
}

func TestPermissionsFitTheBitSet(t *testing.T) {
	if n := len(AllPermissions()); n > 64 {
		t.Fatalf("%d permissions do not fit permBits (uint64); widen it", n)
	}
	seen := map[Permission]bool{}
	for _, p := range AllPermissions() {
		if seen[p] {
			t.Errorf("permission %s is listed twice", p)
		}
		seen[p] = true
	}
}

func BenchmarkDecide(b *testing.B) {
	a, _ := NewAuthorizer(nil)
	roles := []Role{RoleUser}
	b.ReportAllocs()
	for b.Loop() {
		if !a.Decide(roles, PermSessionsRead).Allowed {
			b.Fatal("refused")
		}
	}
}
