package rest

import (
	"bytes"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
	"github.com/agentauth/agentauth/ports/porttest"
)

// withKey sends a request with a managed key (or any Bearer text).
func (h *axHarness) withKey(t *testing.T, key, method, path, body string) axResponse {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, h.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode == http.StatusUnauthorized && !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("401 without WWW-Authenticate: Bearer")
	}
	return axResponse{status: res.StatusCode, body: b}
}

func expiresIn(d time.Duration) string { return time.Now().Add(d).UTC().Format(time.RFC3339) }

type keyAnswer struct {
	ID          string              `json:"id"`
	Key         string              `json:"key"`
	Prefix      string              `json:"prefix"`
	Owner       string              `json:"owner"`
	Status      string              `json:"status"`
	Permissions []domain.Permission `json:"permissions"`
	LastUsedAt  *time.Time          `json:"last_used_at"`
}

// TestManagedKeyOverHTTP: a LEAD makes a key narrower than itself, uses it
// (the key's scopes decide), lists it without its secret, revokes it, and
// the key is refused from then on; every step is in the audit log.
func TestManagedKeyOverHTTP(t *testing.T) {
	h := axNew(t)
	r := h.do(t, "lea", "POST", "/api/v2/keys", `{"name":"ci runner","permissions":["me:read","sessions:read"],"expires_at":"`+expiresIn(time.Hour)+`"}`)
	if r.status != 201 {
		t.Fatalf("create = %d %s", r.status, r.body)
	}
	var made keyAnswer
	r.decode(t, &made)
	if _, err := domain.ParseManagedKey(made.Key); err != nil || made.Prefix != "aak_"+made.ID+"_" || !strings.HasPrefix(made.Key, made.Prefix) {
		t.Fatalf("made %+v: %v", made, err)
	}

	me := h.withKey(t, made.Key, "GET", "/api/v2/me", "")
	var who meResponse
	me.decode(t, &who)
	if me.status != 200 || who.Subject != "lea" || who.Method != domain.MethodManagedKey ||
		!slices.Equal(who.Permissions, []domain.Permission{domain.PermMeRead, domain.PermSessionsRead}) {
		t.Fatalf("/me with the key = %d %+v", me.status, who)
	}
	if r := h.withKey(t, made.Key, "GET", "/api/v2/sessions", ""); r.status != 200 {
		t.Errorf("GET /sessions with the key = %d %s", r.status, r.body)
	}
	r = h.withKey(t, made.Key, "POST", "/api/v2/projects", `{"name":"x"}`)
	if e := r.errorOf(t); r.status != 403 || e.ReasonCode != domain.ReasonKeyLacksPermission || e.Missing != string(domain.PermProjectsCreate) {
		t.Errorf("POST /projects with the key = %d %+v, want 403 %s", r.status, e, domain.ReasonKeyLacksPermission)
	}
	r = h.withKey(t, made.Key, "POST", "/api/v2/keys", `{"name":"x","expires_at":"`+expiresIn(time.Hour)+`"}`)
	if e := r.errorOf(t); r.status != 403 {
		t.Errorf("a key making a key = %d %+v, want 403", r.status, e)
	}

	var list struct{ Keys []keyAnswer }
	h.do(t, "lea", "GET", "/api/v2/keys", "").decode(t, &list)
	if len(list.Keys) != 1 || list.Keys[0].ID != made.ID || list.Keys[0].Key != "" || list.Keys[0].LastUsedAt == nil || list.Keys[0].Status != "active" {
		t.Fatalf("list = %+v", list)
	}
	if strings.Contains(string(h.do(t, "lea", "GET", "/api/v2/keys", "").body), made.Key[len(made.Prefix):]) {
		t.Fatal("the list shows the secret")
	}

	if r := h.do(t, "bob", "DELETE", "/api/v2/keys/"+made.ID, ""); r.status != 404 {
		t.Errorf("another USER revoking = %d %s, want 404", r.status, r.body)
	}
	h.must(t, 204, "lea", "DELETE", "/api/v2/keys/"+made.ID, "")
	r = h.withKey(t, made.Key, "GET", "/api/v2/me", "")
	if e := r.errorOf(t); r.status != 401 || e.ReasonCode != domain.ReasonKeyRevoked {
		t.Errorf("revoked key = %d %+v, want 401 %s", r.status, e, domain.ReasonKeyRevoked)
	}

	recs, err := h.store.QueryAudit(porttest.Context(t), ports.AuditQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var sawUse, sawMake, sawRevoke, sawRefusal bool
	for _, rec := range recs {
		switch {
		case rec.AuthMethod == domain.MethodManagedKey && rec.Path == "/api/v2/me" && rec.Decision == domain.AuditAllow:
			sawUse = strings.Contains(rec.Reason, made.ID) && rec.Subject == "lea"
		case rec.Method == "POST" && rec.Path == "/api/v2/keys" && rec.Subject == "lea" && rec.Decision == domain.AuditAllow:
			sawMake = strings.Contains(rec.Reason, "made managed key "+made.ID)
		case rec.Method == "DELETE" && rec.Subject == "lea" && rec.Decision == domain.AuditAllow:
			sawRevoke = strings.Contains(rec.Reason, "revoked managed key "+made.ID)
		case rec.Decision == domain.AuditDeny && rec.Status == 401 && strings.Contains(rec.Reason, domain.ReasonKeyRevoked):
			sawRefusal = strings.Contains(rec.Reason, made.ID)
		}
	}
	if !sawUse || !sawMake || !sawRevoke || !sawRefusal {
		t.Errorf("audit: use %v, creation %v, revocation %v, refusal %v; want all", sawUse, sawMake, sawRevoke, sawRefusal)
	}
}

func TestManagedKeyBadInput(t *testing.T) {
	h := axNew(t)
	tests := []struct {
		name, subject, body string
		status              int
		code                string
	}{
		{"wider than the owner", "uma", `{"name":"x","permissions":["audit:read"],"expires_at":"` + expiresIn(time.Hour) + `"}`, 403, domain.ReasonKeyWiderThanOwner},
		{"unknown permission", "uma", `{"name":"x","permissions":["nope:x"],"expires_at":"` + expiresIn(time.Hour) + `"}`, 400, domain.ReasonKeyWiderThanOwner},
		{"no expiry", "uma", `{"name":"x"}`, 400, domain.ReasonKeyExpiry},
		{"beyond the maximum", "uma", `{"name":"x","expires_at":"` + expiresIn(91*24*time.Hour) + `"}`, 400, domain.ReasonKeyExpiry},
		{"in the past", "uma", `{"name":"x","expires_at":"` + expiresIn(-time.Hour) + `"}`, 400, domain.ReasonKeyExpiry},
		{"a permission with a space", "uma", `{"name":"x","permissions":["sessions:read "],"expires_at":"` + expiresIn(time.Hour) + `"}`, 400, domain.ReasonKeyWiderThanOwner},
		{"expiry not a time", "uma", `{"name":"x","expires_at":"tomorrow"}`, 400, ""},
		{"unknown field", "uma", `{"name":"x","scopes":[],"expires_at":"` + expiresIn(time.Hour) + `"}`, 400, ""},
		{"service account by a USER", "uma", `{"name":"x","service_account":"ci","expires_at":"` + expiresIn(time.Hour) + `"}`, 403, domain.ReasonRoleLacksPermission},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.do(t, tt.subject, "POST", "/api/v2/keys", tt.body)
			if e := r.errorOf(t); r.status != tt.status || tt.code != "" && e.ReasonCode != tt.code {
				t.Errorf("= %d %+v, want %d %s", r.status, e, tt.status, tt.code)
			}
		})
	}
	t.Run("per-owner limit", func(t *testing.T) {
		for i := range 6 {
			r := h.do(t, "bob", "POST", "/api/v2/keys", `{"name":"k","expires_at":"`+expiresIn(time.Hour)+`"}`)
			want := map[bool]int{true: 201, false: 409}[i < 5]
			if r.status != want {
				t.Fatalf("key %d = %d %s, want %d", i+1, r.status, r.body, want)
			}
		}
	})
	// A real key with its last character changed: its checksum no longer
	// matches (1 in 64 keys already ends in "x", so not always "x").
	k := domain.NewManagedKey().Text
	wrongLast := map[bool]string{true: "y", false: "x"}[k[len(k)-1] == 'x']
	for _, bad := range []string{"aak_", "aak_aaaaaaaaaaaa_" + strings.Repeat("0", 49), k[:len(k)-1] + wrongLast} {
		r := h.withKey(t, bad, "GET", "/api/v2/me", "")
		if e := r.errorOf(t); r.status != 401 || e.ReasonCode != domain.ReasonKeyMalformed {
			t.Errorf("key %q = %d %+v, want 401 %s", bad, r.status, e, domain.ReasonKeyMalformed)
		}
	}
	if r := h.withKey(t, domain.NewManagedKey().Text, "GET", "/api/v2/me", ""); r.status != 401 || r.errorOf(t).ReasonCode != domain.ReasonKeyUnknown {
		t.Errorf("a well-formed key never made = %d %s, want 401 %s", r.status, r.body, domain.ReasonKeyUnknown)
	}
}

// TestKeyListsByRole: a USER sees its own keys, a LEAD also those of its
// project's members, AUDITOR and ADMIN every key.
func TestKeyListsByRole(t *testing.T) {
	h := axNew(t)
	h.must(t, 201, "lea", "POST", "/api/v2/projects", `{"name":"team","members":[{"subject":"lea","lead":true},{"subject":"uma"}]}`)
	ids := map[string]string{}
	for _, who := range []string{"uma", "bob", "lea"} {
		made := h.must(t, 201, who, "POST", "/api/v2/keys", `{"name":"k","permissions":["me:read"],"expires_at":"`+expiresIn(time.Hour)+`"}`)
		ids[who] = made["id"].(string)
	}
	for _, tt := range []struct {
		subject string
		want    []string
	}{
		{"uma", []string{"uma"}}, {"bob", []string{"bob"}}, {"lea", []string{"uma", "lea"}},
		{"aud", []string{"uma", "bob", "lea"}}, {"adm", []string{"uma", "bob", "lea"}},
	} {
		var list struct{ Keys []keyAnswer }
		h.do(t, tt.subject, "GET", "/api/v2/keys", "").decode(t, &list)
		var got []string
		for _, k := range list.Keys {
			got = append(got, k.Owner)
		}
		slices.Sort(got)
		want := slices.Clone(tt.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s sees the keys of %v, want %v", tt.subject, got, want)
		}
	}
}

// TestServiceAccountKeys: an ADMIN makes a service account with a custom
// role and a key for it; the key acts as the account, and suspending the
// account stops it.
func TestServiceAccountKeys(t *testing.T) {
	h := axNew(t)
	h.must(t, 201, "adm", "POST", "/api/v2/service-accounts", `{"name":"deployer","role":"SECOPS"}`)
	if r := h.do(t, "adm", "POST", "/api/v2/service-accounts", `{"name":"deployer","role":"USER"}`); r.status != 409 {
		t.Errorf("same name again = %d, want 409", r.status)
	}
	if r := h.do(t, "adm", "POST", "/api/v2/service-accounts", `{"name":"x","role":"NOPE"}`); r.status != 400 {
		t.Errorf("unknown role = %d, want 400", r.status)
	}
	made := h.must(t, 201, "adm", "POST", "/api/v2/keys", `{"name":"deploy","service_account":"deployer","expires_at":"`+expiresIn(time.Hour)+`"}`)
	key := made["key"].(string)
	var who meResponse
	h.withKey(t, key, "GET", "/api/v2/me", "").decode(t, &who)
	if who.Subject != "service:deployer" || !slices.Equal(who.Roles, []domain.Role{"SECOPS"}) || !slices.Contains(who.Permissions, domain.PermPoliciesWrite) {
		t.Fatalf("/me = %+v", who)
	}
	h.must(t, 204, "adm", "PUT", "/api/v2/key-owners/service:deployer", `{"disabled":true}`)
	if r := h.withKey(t, key, "GET", "/api/v2/me", ""); r.status != 401 || r.errorOf(t).ReasonCode != domain.ReasonKeyOwnerGone {
		t.Errorf("suspended account's key = %d %s", r.status, r.body)
	}
	h.must(t, 204, "adm", "PUT", "/api/v2/key-owners/service:deployer", `{"disabled":false}`)
	if r := h.withKey(t, key, "GET", "/api/v2/me", ""); r.status != 200 {
		t.Errorf("restored account's key = %d %s", r.status, r.body)
	}
}

// TestKeyOwnerNarrowingAudited: when a person who owns keys comes with
// other roles than its keys were last decided with, the record of that
// request says its keys now follow them; a refused unknown key is named.
func TestKeyOwnerNarrowingAudited(t *testing.T) {
	h := axNew(t)
	ctx := porttest.Context(t)
	// uma owns a key, recorded while it was a LEAD.
	if err := h.store.PutKeyOwner(ctx, domain.KeyOwner{Subject: "uma", Roles: []domain.Role{domain.RoleLead}}); err != nil {
		t.Fatal(err)
	}
	h.must(t, 200, "uma", "GET", "/api/v2/me", "")
	unknown := domain.NewManagedKey()
	if r := h.withKey(t, unknown.Text, "GET", "/api/v2/me", ""); r.status != 401 {
		t.Fatalf("unknown key = %d", r.status)
	}
	recs, err := h.store.QueryAudit(ctx, ports.AuditQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var narrowed, named bool
	for _, rec := range recs {
		narrowed = narrowed || rec.Subject == "uma" && strings.Contains(rec.Reason, "managed keys of uma now follow roles [USER]")
		named = named || rec.Status == 401 && strings.Contains(rec.Reason, unknown.ID)
	}
	if !narrowed || !named {
		t.Errorf("audit: narrowing named %v, unknown key named %v; want both", narrowed, named)
	}
}

// TestConsoleKeysPage makes, uses and revokes a key through the console's
// forms: the secret is on the answer to the form alone, the list never
// shows it, and the forms refuse what the API refuses.
func TestConsoleKeysPage(t *testing.T) {
	h := axNew(t)
	r := h.do(t, "lea", "POST", "/console/keys", "name=laptop&days=2&permissions=me:read&permissions=sessions:read")
	secret := regexp.MustCompile(`value="(aak_[^"]+)"`).FindSubmatch(r.body)
	if r.status != 201 || secret == nil {
		t.Fatalf("make = %d, secret %q:\n%s", r.status, secret, r.body)
	}
	key := string(secret[1])
	id, err := domain.ParseManagedKey(key)
	if err != nil {
		t.Fatal(err)
	}
	var who meResponse
	me := h.withKey(t, key, "GET", "/api/v2/me", "")
	me.decode(t, &who)
	if me.status != 200 || who.Subject != "lea" || !slices.Equal(who.Permissions, []domain.Permission{domain.PermMeRead, domain.PermSessionsRead}) {
		t.Fatalf("/me with the key = %d %+v", me.status, who)
	}
	page := h.do(t, "lea", "GET", "/console/keys", "")
	if page.status != 200 || !strings.Contains(string(page.body), "aak_"+id+"_…") || strings.Contains(string(page.body), key) {
		t.Fatalf("keys page = %d, lists the key by prefix only? %s", page.status, page.body)
	}

	refusals := []struct {
		name, body string
		want       int
	}{
		{"no expiry", "name=x&days=0", 400},
		{"past the maximum", "name=x&days=100000", 400},
		{"wider than the owner", "name=x&days=1&permissions=settings:write", 403},
	}
	for _, tt := range refusals {
		if r := h.do(t, "lea", "POST", "/console/keys", tt.body); r.status != tt.want || bytes.Contains(r.body, []byte("aak_")) {
			t.Errorf("%s: got %d, want %d without a key", tt.name, r.status, tt.want)
		}
	}

	if r := h.do(t, "lea", "POST", "/console/keys/"+id+"/revoke", ""); r.status != 200 || !strings.Contains(string(r.body), "revoked") {
		t.Fatalf("revoke = %d %s", r.status, r.body)
	}
	r = h.withKey(t, key, "GET", "/api/v2/me", "")
	if e := r.errorOf(t); r.status != 401 || e.ReasonCode != domain.ReasonKeyRevoked {
		t.Errorf("revoked key = %d %+v, want 401 %s", r.status, e, domain.ReasonKeyRevoked)
	}
}
