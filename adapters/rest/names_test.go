package rest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// named gives each caller of the harness the display name its identity
// provider would: text the person chose, markup included.
type named struct {
	ports.Authenticator
	names map[string]string
}

func (n named) Authenticate(ctx context.Context, cred ports.Credential) (domain.Principal, error) {
	p, err := n.Authenticator.Authenticate(ctx, cred)
	if err == nil {
		p.Name = n.names[p.Subject]
	}
	return p, err
}

// umaName is a display name a person could choose to attack the console.
const umaName = `Uma <script>alert(1)</script>`

func namesStart(t *testing.T) *axHarness {
	return axStart(t, filepath.Join(t.TempDir(), "agentauth.db"), axOptions{authn: func(keys ports.Authenticator) ports.Authenticator {
		return named{keys, map[string]string{"uma": umaName, "lea": "Lea Lead"}}
	}})
}

// TestAgentNamesAPI: an agent's name is optional, checked, answered and
// listed; /api/v2/me says how the credential names the caller.
func TestAgentNamesAPI(t *testing.T) {
	h := namesStart(t)
	_, session, unnamed := axSession(t, h, "auto")
	agents := "/api/v2/sessions/" + session + "/agents"
	a := h.must(t, 201, "uma", "POST", agents, `{"name":"notes <agent>","tools":["fs.read"]}`)
	if a["name"] != "notes <agent>" {
		t.Errorf("created %v, want named notes <agent>", a)
	}
	for _, bad := range []string{`"` + strings.Repeat("n", domain.MaxAgentName+1) + `"`, `"two\nlines"`, `"rtl\u202eoverride"`, `" padded"`, `42`} {
		if r := h.do(t, "uma", "POST", agents, `{"name":`+bad+`}`); r.status != 400 || r.errorOf(t).Code != "invalid_request" {
			t.Errorf("name %s: %d %s, want 400 invalid_request", bad, r.status, r.body)
		}
	}
	var page struct {
		Agents []agentJSON `json:"agents"`
	}
	h.do(t, "uma", "GET", agents, "").decode(t, &page)
	byID := map[string]string{}
	for _, g := range page.Agents {
		byID[g.ID] = g.Name
	}
	if len(byID) != 2 || byID[a["id"].(string)] != "notes <agent>" || byID[unnamed] != "" {
		t.Errorf("listed %+v; want the named agent and the unnamed one", page.Agents)
	}
	if me := h.must(t, 200, "uma", "GET", "/api/v2/me", ""); me["name"] != umaName || me["subject"] != "uma" {
		t.Errorf("me = %v, want uma named %q", me, umaName)
	}
	if me := h.must(t, 200, "bob", "GET", "/api/v2/me", ""); me["name"] != nil {
		t.Errorf("me = %v, want no name for bob", me)
	}
}
