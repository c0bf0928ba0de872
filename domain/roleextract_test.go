package domain

import (
	"encoding/base64"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

const client = "agentauth"

func realm(names ...any) Claims {
	return Claims{"realm_access": map[string]any{"roles": names}}
}

func clientRoles(clientID string, names ...any) Claims {
	return Claims{"resource_access": map[string]any{clientID: map[string]any{"roles": names}}}
}

func merge(cs ...Claims) Claims {
	out := Claims{}
	for _, c := range cs {
		for k, v := range c {
			if old, ok := out[k].(map[string]any); ok {
				for kk, vv := range v.(map[string]any) {
					old[kk] = vv
				}
				continue
			}
			out[k] = v
		}
	}
	return out
}

func TestExtractRoles(t *testing.T) {
	tests := []struct {
		name        string
		id, access  Claims
		clientID    string
		roleMap     map[string]Role
		wantRoles   []Role
		wantSource  string
		wantDropped []string // names dropped, in order
		wantIgnored int
	}{
		{name: "realm role in id token", id: realm("admin"), wantRoles: []Role{RoleAdmin}, wantSource: TokenID},
		{name: "default roles dropped, known kept", id: realm("default-roles-agents", "offline_access", "lead", "uma_authorization"),
			wantRoles: []Role{RoleLead}, wantSource: TokenID, wantDropped: []string{"default-roles-agents", "offline_access", "uma_authorization"}},
		{name: "client role of our client", id: clientRoles(client, "lead"), wantRoles: []Role{RoleLead}, wantSource: TokenID},
		{name: "realm and client roles together, deduplicated", id: merge(realm("user", "auditor"), clientRoles(client, "USER")),
			wantRoles: []Role{RoleUser, RoleAuditor}, wantSource: TokenID},
		{name: "client role of another client ignored", id: clientRoles("other-app", "admin"),
			wantRoles: []Role{RoleUser}, wantSource: "default", wantIgnored: 1},
		{name: "another client ignored, ours kept", id: merge(clientRoles("other-app", "admin"), clientRoles(client, "auditor")),
			wantRoles: []Role{RoleAuditor}, wantSource: TokenID, wantIgnored: 1},
		{name: "empty client id sees no client roles", id: clientRoles("", "admin"), clientID: "-",
			wantRoles: []Role{RoleUser}, wantSource: "default", wantIgnored: 0},
		{name: "no roles in id token: access token used", id: Claims{"sub": "x"}, access: realm("auditor"),
			wantRoles: []Role{RoleAuditor}, wantSource: TokenAccess},
		{name: "nil id token: access token used", access: clientRoles(client, "admin"), wantRoles: []Role{RoleAdmin}, wantSource: TokenAccess},
		{name: "id token with only unknown names does not fall back", id: realm("agent-admin"), access: realm("admin"),
			wantRoles: []Role{RoleUser}, wantSource: "default", wantDropped: []string{"agent-admin"}},
		{name: "empty roles array in id token falls back", id: realm(), access: realm("lead"), wantRoles: []Role{RoleLead}, wantSource: TokenAccess},
		{name: "roles in neither token", id: Claims{}, access: Claims{}, wantRoles: []Role{RoleUser}, wantSource: "default"},
		{name: "both nil", wantRoles: []Role{RoleUser}, wantSource: "default"},
		{name: "prefixed variant dropped", id: realm("agentauth-admin", "admins", "administrator"),
			wantRoles: []Role{RoleUser}, wantSource: "default", wantDropped: []string{"agentauth-admin", "admins", "administrator"}},
		{name: "mixed case upper-cased", id: realm("Admin", "aUdItOr"), wantRoles: []Role{RoleAdmin, RoleAuditor}, wantSource: TokenID},
		{name: "dotless i is not i", id: realm("admın"), wantRoles: []Role{RoleUser}, wantSource: "default", wantDropped: []string{"admın"}},
		{name: "Kelvin sign is not k", id: realm("\u212Aadmin"), wantRoles: []Role{RoleUser}, wantSource: "default", wantDropped: []string{"\u212Aadmin"}},
		{name: "long s is not s", id: realm("u\u017Fer"), wantRoles: []Role{RoleUser}, wantSource: "default", wantDropped: []string{"u\u017Fer"}},
		{name: "surrounding space not trimmed", id: realm(" admin"), wantRoles: []Role{RoleUser}, wantSource: "default", wantDropped: []string{" admin"}},
		{name: "custom role names are not mapped from the provider", id: realm("operator"), wantRoles: []Role{RoleUser}, wantSource: "default", wantDropped: []string{"operator"}},
		{name: "roleMap maps a name", id: realm("agent-admin"), roleMap: map[string]Role{"agent-admin": RoleAdmin},
			wantRoles: []Role{RoleAdmin}, wantSource: TokenID},
		{name: "roleMap to a non-builtin is dropped", id: realm("agent-admin"), roleMap: map[string]Role{"agent-admin": "ROOT"},
			wantRoles: []Role{RoleUser}, wantSource: "default", wantDropped: []string{"agent-admin"}},
		{name: "roleMap is exact, other names still upper-cased", id: realm("Agent-Admin", "lead"), roleMap: map[string]Role{"agent-admin": RoleAdmin},
			wantRoles: []Role{RoleLead}, wantSource: TokenID, wantDropped: []string{"Agent-Admin"}},
		// Wrong claim types never panic and are reported.
		{name: "realm_access not an object", id: Claims{"realm_access": "admin"}, access: realm("lead"),
			wantRoles: []Role{RoleLead}, wantSource: TokenAccess, wantIgnored: 1},
		{name: "roles not an array", id: Claims{"realm_access": map[string]any{"roles": "admin"}},
			wantRoles: []Role{RoleUser}, wantSource: "default", wantIgnored: 1},
		{name: "realm_access without roles", id: Claims{"realm_access": map[string]any{}}, access: realm("admin"),
			wantRoles: []Role{RoleAdmin}, wantSource: TokenAccess},
		{name: "non-string entries skipped", id: realm(1.0, nil, true, map[string]any{"a": "admin"}, "auditor"),
			wantRoles: []Role{RoleAuditor}, wantSource: TokenID, wantIgnored: 4},
		{name: "resource_access not an object", id: Claims{"resource_access": []any{"admin"}},
			wantRoles: []Role{RoleUser}, wantSource: "default", wantIgnored: 1},
		{name: "our resource_access entry not an object", id: Claims{"resource_access": map[string]any{client: "admin"}},
			wantRoles: []Role{RoleUser}, wantSource: "default", wantIgnored: 1},
		{name: "realm_access null", id: Claims{"realm_access": nil}, wantRoles: []Role{RoleUser}, wantSource: "default", wantIgnored: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clientID := tt.clientID
			switch clientID {
			case "":
				clientID = client
			case "-":
				clientID = ""
			}
			got := ExtractRoles(tt.id, tt.access, clientID, tt.roleMap)
			if !reflect.DeepEqual(got.Roles, tt.wantRoles) {
				t.Errorf("Roles: got %v, want %v", got.Roles, tt.wantRoles)
			}
			if got.Source != tt.wantSource {
				t.Errorf("Source: got %q, want %q", got.Source, tt.wantSource)
			}
			var dropped []string
			for _, f := range got.Findings {
				if (f.Role == "") != (f.Dropped != "") {
					t.Errorf("finding %+v: exactly one of Role and Dropped must be set", f)
				}
				if f.Dropped != "" {
					dropped = append(dropped, f.Name)
				}
			}
			if !slices.Equal(dropped, tt.wantDropped) {
				t.Errorf("dropped: got %q, want %q", dropped, tt.wantDropped)
			}
			if len(got.Ignored) != tt.wantIgnored {
				t.Errorf("Ignored: got %q (%d), want %d entries", got.Ignored, len(got.Ignored), tt.wantIgnored)
			}
		})
	}
}

func TestExtractRolesFindingsNameTheClaim(t *testing.T) {
	got := ExtractRoles(merge(realm("admin"), clientRoles(client, "lead")), nil, client, nil)
	want := []RoleFinding{
		{Token: TokenID, Claim: "realm_access.roles", Name: "admin", Role: RoleAdmin},
		{Token: TokenID, Claim: "resource_access.agentauth.roles", Name: "lead", Role: RoleLead},
	}
	if !reflect.DeepEqual(got.Findings, want) {
		t.Errorf("Findings:\n got %+v\nwant %+v", got.Findings, want)
	}
}

func TestASCIIUpper(t *testing.T) {
	tests := []struct{ in, want string }{
		{"admin", "ADMIN"}, {"ADMIN", "ADMIN"}, {"a-z_09", "A-Z_09"}, {"admın", "ADMıN"}, {"ß", "ß"}, {"", ""},
	}
	for _, tt := range tests {
		if got := asciiUpper(tt.in); got != tt.want {
			t.Errorf("asciiUpper(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
}

// claimsOf decodes the payload of a compact JWT without verifying it: the
// fuzz targets feed ExtractRoles whatever a token can carry.
func claimsOf(token string) Claims {
	parts := strings.Split(token, ".")
	if len(parts) < 2 {
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil
	}
	var c Claims
	if json.Unmarshal(b, &c) != nil {
		return nil
	}
	return c
}

// FuzzExtractRoles: whatever the tokens hold, extraction never panics,
// always yields at least one role, only built-in roles, and USER alone
// when it defaults. The corpus in testdata/fuzz holds forged tokens.
func FuzzExtractRoles(f *testing.F) {
	f.Add(`{"realm_access":{"roles":["admin"]}}`, `{}`, "agentauth")
	f.Add(`{"resource_access":{"agentauth":{"roles":["LEAD","x"]},"other":{"roles":["admin"]}}}`, `{"realm_access":{"roles":["user"]}}`, "agentauth")
	f.Add(`{"realm_access":"admin"}`, `{"realm_access":{"roles":[1,null,"auditor"]}}`, "")
	f.Add(`{"realm_access":{"roles":["admın"]}}`, `null`, "agentauth")
	f.Fuzz(func(t *testing.T, idJSON, accessJSON, clientID string) {
		var id, access Claims
		_ = json.Unmarshal([]byte(idJSON), &id)
		_ = json.Unmarshal([]byte(accessJSON), &access)
		checkExtraction(t, ExtractRoles(id, access, clientID, nil))
	})
}

// FuzzExtractRolesFromToken feeds whole compact tokens (the seed corpus has
// the forged ones of the e2e suite: alg none, bad signature, other issuer,
// other client, expired).
func FuzzExtractRolesFromToken(f *testing.F) {
	f.Add("eyJhbGciOiJub25lIn0.eyJyZWFsbV9hY2Nlc3MiOnsicm9sZXMiOlsiYWRtaW4iXX19.")
	f.Fuzz(func(t *testing.T, token string) {
		checkExtraction(t, ExtractRoles(claimsOf(token), claimsOf(token), "agentauth", nil))
	})
}

func checkExtraction(t *testing.T, ex RoleExtraction) {
	t.Helper()
	if len(ex.Roles) == 0 {
		t.Fatalf("no role: %+v", ex)
	}
	for _, r := range ex.Roles {
		if !r.IsBuiltin() {
			t.Fatalf("role %q is not built in", r)
		}
	}
	if ex.Source == "default" && !slices.Equal(ex.Roles, []Role{RoleUser}) {
		t.Fatalf("default source with roles %v", ex.Roles)
	}
}

func TestExtractRolesAt(t *testing.T) {
	groups := func(v any) Claims { return Claims{"groups": v} }
	tests := []struct {
		name          string
		id, access    Claims
		claim         string
		roleMap       map[string]Role
		want          []Role
		source        string
		ignoredPrefix string
	}{
		{name: "array in the id token", id: groups([]any{"lead", "ops"}), claim: "groups", want: []Role{RoleLead}, source: TokenID},
		{name: "single string", id: groups("auditor"), claim: "groups", want: []Role{RoleAuditor}, source: TokenID},
		{name: "nested path", access: clientRoles("agent-service", "admin"), claim: "resource_access.agent-service.roles", want: []Role{RoleAdmin}, source: TokenAccess},
		{name: "id token without it: the access token", id: realm("admin"), access: groups([]any{"lead"}), claim: "groups", want: []Role{RoleLead}, source: TokenAccess},
		{name: "Keycloak's claims are not read", id: realm("admin"), claim: "groups", want: []Role{RoleUser}, source: "default"},
		{name: "wrong type ignored", id: groups(42.0), claim: "groups", want: []Role{RoleUser}, source: "default", ignoredPrefix: "id_token groups: not an array"},
		{name: "a path through a non-object", id: Claims{"resource_access": "x"}, claim: "resource_access.a.roles", want: []Role{RoleUser}, source: "default", ignoredPrefix: "id_token resource_access.a.roles: a part"},
		{name: "role map", id: groups([]any{"platform-admins"}), claim: "groups", roleMap: map[string]Role{"platform-admins": RoleAdmin}, want: []Role{RoleAdmin}, source: TokenID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex := ExtractRolesAt(tt.id, tt.access, tt.claim, tt.roleMap)
			if !slices.Equal(ex.Roles, tt.want) || ex.Source != tt.source {
				t.Errorf("got %v from %s, want %v from %s (%+v)", ex.Roles, ex.Source, tt.want, tt.source, ex)
			}
			if tt.ignoredPrefix != "" && (len(ex.Ignored) == 0 || !strings.HasPrefix(ex.Ignored[0], tt.ignoredPrefix)) {
				t.Errorf("Ignored %q, want %q…", ex.Ignored, tt.ignoredPrefix)
			}
		})
	}
}

// TestExtractRolesFrom: the first source whose claim holds a role name
// wins (id token, then userinfo, then access token), with the source named.
func TestExtractRolesFrom(t *testing.T) {
	nested := Claims{"ext": map[string]any{"roles": []any{"lead"}}}
	for _, tc := range []struct {
		name       string
		sources    []ClaimSource
		claim      string
		wantRoles  []Role
		wantSource string
	}{
		{"userinfo when the id token has none", []ClaimSource{{TokenID, Claims{"sub": "a"}}, {TokenUserinfo, nested}, {TokenAccess, Claims{"ext": map[string]any{"roles": []any{"admin"}}}}},
			"ext.roles", []Role{RoleLead}, TokenUserinfo},
		{"id token first", []ClaimSource{{TokenID, nested}, {TokenUserinfo, Claims{"ext": map[string]any{"roles": []any{"admin"}}}}}, "ext.roles", []Role{RoleLead}, TokenID},
		{"nil sources skipped", []ClaimSource{{TokenID, nil}, {TokenIntrospection, nested}}, "ext.roles", []Role{RoleLead}, TokenIntrospection},
		{"none anywhere", []ClaimSource{{TokenID, Claims{}}, {TokenUserinfo, nil}}, "ext.roles", []Role{RoleUser}, "default"},
		{"Keycloak claims without a path", []ClaimSource{{TokenID, Claims{}}, {TokenUserinfo, Claims{"realm_access": map[string]any{"roles": []any{"auditor"}}}}}, "", []Role{RoleAuditor}, TokenUserinfo},
	} {
		got := ExtractRolesFrom(tc.sources, tc.claim, "agentauth", nil)
		if !slices.Equal(got.Roles, tc.wantRoles) || got.Source != tc.wantSource {
			t.Errorf("%s: got %v from %q, want %v from %q", tc.name, got.Roles, got.Source, tc.wantRoles, tc.wantSource)
		}
	}
}
