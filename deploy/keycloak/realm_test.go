package realm

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/Nerzal/gocloak/v13"
)

const realmFile = "realm-agents.json"

// loadRealm decodes the realm export strictly: a field gocloak's
// RealmRepresentation does not know (a typo, or a key Keycloak would ignore)
// fails the test.
func loadRealm(t *testing.T) *gocloak.RealmRepresentation {
	t.Helper()
	raw, err := os.ReadFile(realmFile)
	if err != nil {
		t.Fatalf("read %s: %v", realmFile, err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var rep gocloak.RealmRepresentation
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("decode %s strictly into gocloak.RealmRepresentation: %v", realmFile, err)
	}
	if dec.More() {
		t.Fatalf("%s holds more than one JSON value", realmFile)
	}
	return &rep
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func boolOf(p *bool) bool { return p != nil && *p }

func strs(p *[]string) []string {
	if p == nil {
		return nil
	}
	return *p
}

func findClient(t *testing.T, rep *gocloak.RealmRepresentation, clientID string) gocloak.Client {
	t.Helper()
	if rep.Clients == nil {
		t.Fatal("realm has no clients")
	}
	for _, c := range *rep.Clients {
		if str(c.ClientID) == clientID {
			return c
		}
	}
	t.Fatalf("client %q not found", clientID)
	return gocloak.Client{}
}

func findUser(t *testing.T, rep *gocloak.RealmRepresentation, username string) gocloak.User {
	t.Helper()
	if rep.Users == nil {
		t.Fatal("realm has no users")
	}
	for _, u := range *rep.Users {
		if str(u.Username) == username {
			return u
		}
	}
	t.Fatalf("user %q not found", username)
	return gocloak.User{}
}

func sortedCopy(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return out
}

func TestRealmBasics(t *testing.T) {
	rep := loadRealm(t)
	if got := str(rep.Realm); got != "agents" {
		t.Errorf("realm = %q, want agents", got)
	}
	if !boolOf(rep.Enabled) {
		t.Error("realm is not enabled")
	}
	if rep.AccessTokenLifespan == nil || *rep.AccessTokenLifespan != 300 {
		t.Errorf("accessTokenLifespan = %v, want 300", rep.AccessTokenLifespan)
	}
}

func TestRealmRoles(t *testing.T) {
	rep := loadRealm(t)
	if rep.Roles == nil || rep.Roles.Realm == nil {
		t.Fatal("realm has no roles.realm")
	}
	var names []string
	for _, r := range *rep.Roles.Realm {
		names = append(names, str(r.Name))
	}
	want := []string{"admin", "app-admin", "auditor", "lead", "user"}
	if got := sortedCopy(names); !slices.Equal(got, want) {
		t.Errorf("realm roles = %v, want exactly %v", got, want)
	}
}

func TestClientRoles(t *testing.T) {
	rep := loadRealm(t)
	if rep.Roles == nil || rep.Roles.Client == nil {
		t.Fatal("realm has no roles.client")
	}
	tests := []struct {
		client string
		want   []string
	}{
		{"agentauth", []string{"admin", "lead"}},
		{"other-app", []string{"admin"}},
	}
	for _, tc := range tests {
		t.Run(tc.client, func(t *testing.T) {
			roles, ok := (*rep.Roles.Client)[tc.client]
			if !ok {
				t.Fatalf("no client roles for %q", tc.client)
			}
			var names []string
			for _, r := range roles {
				names = append(names, str(r.Name))
			}
			if got := sortedCopy(names); !slices.Equal(got, tc.want) {
				t.Errorf("client roles of %s = %v, want %v", tc.client, got, tc.want)
			}
		})
	}
}

func TestClients(t *testing.T) {
	rep := loadRealm(t)
	tests := []struct {
		clientID      string
		secret        string
		standardFlow  bool
		redirectURIs  []string
		webOrigins    []string
		pkceAttribute string
	}{
		{
			clientID:      "agentauth",
			secret:        "agentauth-e2e-secret",
			standardFlow:  true,
			redirectURIs:  []string{"http://127.0.0.1:18080/auth/callback", "http://localhost:18080/auth/callback"},
			webOrigins:    []string{"http://127.0.0.1:18080", "http://localhost:18080"},
			pkceAttribute: "S256",
		},
		{
			clientID: "other-app",
			secret:   "other-app-secret",
		},
	}
	for _, tc := range tests {
		t.Run(tc.clientID, func(t *testing.T) {
			c := findClient(t, rep, tc.clientID)
			if c.PublicClient == nil || *c.PublicClient {
				t.Error("client must be confidential (publicClient false)")
			}
			if boolOf(c.BearerOnly) {
				t.Error("client must not be bearer-only")
			}
			if c.Enabled != nil && !*c.Enabled {
				t.Error("client is disabled")
			}
			if got := str(c.Secret); got != tc.secret {
				t.Errorf("secret = %q, want %q", got, tc.secret)
			}
			if got := str(c.ClientAuthenticatorType); got != "" && got != "client-secret" {
				t.Errorf("clientAuthenticatorType = %q, want client-secret", got)
			}
			if !boolOf(c.DirectAccessGrantsEnabled) {
				t.Error("directAccessGrantsEnabled must be true (ROPC login)")
			}
			if boolOf(c.StandardFlowEnabled) != tc.standardFlow {
				t.Errorf("standardFlowEnabled = %v, want %v", boolOf(c.StandardFlowEnabled), tc.standardFlow)
			}
			if tc.redirectURIs != nil {
				if got := sortedCopy(strs(c.RedirectURIs)); !slices.Equal(got, sortedCopy(tc.redirectURIs)) {
					t.Errorf("redirectUris = %v, want %v", got, tc.redirectURIs)
				}
				if got := sortedCopy(strs(c.WebOrigins)); !slices.Equal(got, sortedCopy(tc.webOrigins)) {
					t.Errorf("webOrigins = %v, want %v", got, tc.webOrigins)
				}
			}
			if tc.pkceAttribute != "" {
				if c.Attributes == nil || (*c.Attributes)["pkce.code.challenge.method"] != tc.pkceAttribute {
					t.Errorf("attribute pkce.code.challenge.method != %q", tc.pkceAttribute)
				}
				// Keycloak sends no back-channel logout to a client with
				// front-channel logout on (seen on 26.7: an admin sign-out
				// then reached agentauth not at all).
				if c.Attributes == nil || (*c.Attributes)["backchannel.logout.url"] == "" || c.FrontChannelLogout == nil || *c.FrontChannelLogout {
					t.Errorf("back-channel logout: want backchannel.logout.url set and frontchannelLogout false, got %v, %v", c.Attributes, c.FrontChannelLogout)
				}
			}
			scopes := strs(c.DefaultClientScopes)
			for _, s := range []string{"roles", "profile", "email"} {
				if !slices.Contains(scopes, s) {
					t.Errorf("defaultClientScopes %v lacks %q", scopes, s)
				}
			}
			if slices.Contains(scopes, "openid") {
				t.Error("openid is not a client scope in Keycloak; it must not be listed")
			}
		})
	}
}

func TestAudienceMapper(t *testing.T) {
	rep := loadRealm(t)
	c := findClient(t, rep, "agentauth")
	if c.ProtocolMappers == nil {
		t.Fatal("agentauth has no protocol mappers")
	}
	for _, m := range *c.ProtocolMappers {
		if str(m.ProtocolMapper) != "oidc-audience-mapper" || m.Config == nil {
			continue
		}
		cfg := *m.Config
		if cfg["included.client.audience"] == "agentauth" && cfg["access.token.claim"] == "true" {
			return
		}
	}
	t.Error("agentauth needs an oidc-audience-mapper adding agentauth to the access token's aud")
}

func TestRoleMappers(t *testing.T) {
	rep := loadRealm(t)
	if rep.ClientScopes == nil {
		t.Fatal("realm has no clientScopes")
	}
	var roles *gocloak.ClientScope
	names := map[string]bool{}
	for i, s := range *rep.ClientScopes {
		names[str(s.Name)] = true
		if str(s.Name) == "roles" {
			roles = &(*rep.ClientScopes)[i]
		}
	}
	// Every scope a client lists must exist: an import that carries
	// clientScopes replaces Keycloak's built-in ones.
	for _, c := range *rep.Clients {
		for _, s := range append(strs(c.DefaultClientScopes), strs(c.OptionalClientScopes)...) {
			if !names[s] {
				t.Errorf("client %s references client scope %q that the file does not define", str(c.ClientID), s)
			}
		}
	}
	if roles == nil {
		t.Fatal("client scope roles not found")
	}
	if roles.ProtocolMappers == nil {
		t.Fatal("client scope roles has no mappers")
	}
	tests := []struct {
		mapper string
		claim  string
	}{
		{"oidc-usermodel-realm-role-mapper", "realm_access.roles"},
		{"oidc-usermodel-client-role-mapper", "resource_access.${client_id}.roles"},
	}
	for _, tc := range tests {
		t.Run(tc.mapper, func(t *testing.T) {
			var found *gocloak.ProtocolMappers
			for i, m := range *roles.ProtocolMappers {
				if str(m.ProtocolMapper) == tc.mapper {
					found = &(*roles.ProtocolMappers)[i]
				}
			}
			if found == nil || found.ProtocolMappersConfig == nil {
				t.Fatalf("mapper %s missing from scope roles", tc.mapper)
			}
			cfg := found.ProtocolMappersConfig
			if got := str(cfg.ClaimName); got != tc.claim {
				t.Errorf("claim.name = %q, want %q", got, tc.claim)
			}
			if got := str(cfg.UsermodelClientRoleMappingClientID); got != "" {
				t.Errorf("usermodel.clientRoleMapping.clientId = %q, want unset (all clients)", got)
			}
			for name, v := range map[string]*string{
				"id.token.claim":       cfg.IDTokenClaim,
				"access.token.claim":   cfg.AccessTokenClaim,
				"userinfo.token.claim": cfg.UserinfoTokenClaim,
				"multivalued":          cfg.Multivalued,
			} {
				if str(v) != "true" {
					t.Errorf("%s = %q, want \"true\"", name, str(v))
				}
			}
		})
	}
}

func groupRealmRoles(t *testing.T, rep *gocloak.RealmRepresentation) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	if rep.Groups == nil {
		return out
	}
	for _, g := range *rep.Groups {
		m, ok := g.(map[string]interface{})
		if !ok {
			t.Fatalf("group is %T, want an object", g)
		}
		path, _ := m["path"].(string)
		if path == "" {
			name, _ := m["name"].(string)
			path = "/" + name
		}
		var roles []string
		if rr, ok := m["realmRoles"].([]interface{}); ok {
			for _, r := range rr {
				s, _ := r.(string)
				roles = append(roles, s)
			}
		}
		out[path] = roles
	}
	return out
}

func TestGroups(t *testing.T) {
	rep := loadRealm(t)
	groups := groupRealmRoles(t, rep)
	want := map[string][]string{"/auditors": {"auditor"}, "/leads": {"lead"}}
	for path, roles := range want {
		if got := groups[path]; !slices.Equal(sortedCopy(got), roles) {
			t.Errorf("group %s realm roles = %v, want %v", path, got, roles)
		}
	}
}

// TestUsers checks every user's credentials and role sources. Each user also
// holds default-roles-agents, as a real export lists it: Keycloak does not give
// imported users the realm's default role on its own.
func TestUsers(t *testing.T) {
	rep := loadRealm(t)
	tests := []struct {
		username    string
		realmRoles  []string
		groups      []string
		clientRoles map[string][]string
	}{
		{username: "alice", realmRoles: []string{"admin"}},
		{username: "bob", realmRoles: []string{"user"}},
		{username: "carol", groups: []string{"/leads"}},
		{username: "dave", groups: []string{"/auditors"}},
		{username: "erin"},
		{username: "frank", realmRoles: []string{"app-admin"}},
		{username: "grace", clientRoles: map[string][]string{"other-app": {"admin"}}},
		{username: "henry", clientRoles: map[string][]string{"agentauth": {"lead"}}},
		{username: "ivan", realmRoles: []string{"user"}},
	}
	for _, tc := range tests {
		t.Run(tc.username, func(t *testing.T) {
			u := findUser(t, rep, tc.username)
			if !boolOf(u.Enabled) {
				t.Error("user is not enabled")
			}
			if !boolOf(u.EmailVerified) {
				t.Error("email is not verified")
			}
			if str(u.Email) == "" || str(u.FirstName) == "" || str(u.LastName) == "" {
				t.Error("email, firstName and lastName must be set (Keycloak 24+ user profile asks for them otherwise)")
			}
			if u.RequiredActions != nil && len(*u.RequiredActions) > 0 {
				t.Errorf("required actions %v would block password login", *u.RequiredActions)
			}
			if u.Credentials == nil || len(*u.Credentials) != 1 {
				t.Fatal("want exactly one credential")
			}
			cred := (*u.Credentials)[0]
			if str(cred.Type) != "password" || str(cred.Value) != tc.username+"-pw" || boolOf(cred.Temporary) {
				t.Errorf("credential = type %q value %q temporary %v, want password %q not temporary",
					str(cred.Type), str(cred.Value), boolOf(cred.Temporary), tc.username+"-pw")
			}
			wantRealm := sortedCopy(append([]string{"default-roles-agents"}, tc.realmRoles...))
			if got := sortedCopy(strs(u.RealmRoles)); !slices.Equal(got, wantRealm) {
				t.Errorf("realmRoles = %v, want %v", got, wantRealm)
			}
			if got := sortedCopy(strs(u.Groups)); !slices.Equal(got, sortedCopy(tc.groups)) {
				t.Errorf("groups = %v, want %v", got, tc.groups)
			}
			var gotClient map[string][]string
			if u.ClientRoles != nil {
				gotClient = *u.ClientRoles
			}
			if len(gotClient) != len(tc.clientRoles) {
				t.Errorf("clientRoles = %v, want %v", gotClient, tc.clientRoles)
			}
			for client, roles := range tc.clientRoles {
				if got := sortedCopy(gotClient[client]); !slices.Equal(got, sortedCopy(roles)) {
					t.Errorf("clientRoles[%s] = %v, want %v", client, got, roles)
				}
			}
		})
	}
}
