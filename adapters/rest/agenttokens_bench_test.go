package rest

import (
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports/porttest"
)

// benchTokenHarness serves the access model with a session of uma, its
// root agent, server fs with two tools and a rule allowing them.
func benchTokenHarness(b *testing.B) (h *axHarness, session, agent string) {
	// No sub-agent bound or rate limit within reach of a benchmark's loop.
	h = axStart(b, filepath.Join(b.TempDir(), "agentauth.db"), axOptions{maxSubAgents: 1 << 30, rate: 1 << 30})
	ctx, now := porttest.Context(b), time.Now().UTC()
	for _, err := range []error{
		h.store.CreateSession(ctx, domain.Session{ID: "ses_b", Owner: "uma", Mode: domain.ModeAuto, State: domain.SessionActive, CreatedAt: now}),
		h.store.CreateAgent(ctx, domain.Agent{ID: "agt_b", Session: "ses_b", CreatedBy: "uma", CreatedAt: now}),
		h.store.CreateServer(ctx, domain.Server{Name: "fs", URL: "http://127.0.0.1:7/mcp", CreatedAt: now}),
		h.store.CreateTool(ctx, domain.Tool{Name: "fs.read", Server: "fs", ReadOnly: true, CreatedAt: now}),
		h.store.CreateTool(ctx, domain.Tool{Name: "fs.write", Server: "fs", CreatedAt: now}),
		h.store.CreatePolicy(ctx, domain.PolicyRule{ID: "pol_b", Effect: domain.EffectAllow, Tool: "fs.*", Scope: domain.ScopeRole, Value: "USER", CreatedAt: now}),
	} {
		if err != nil {
			b.Fatal(err)
		}
	}
	return h, "ses_b", "agt_b"
}

func benchPost(b *testing.B, req func() *http.Request) string {
	res, err := http.DefaultClient.Do(req())
	if err != nil {
		b.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		b.Fatalf("%d %s", res.StatusCode, body)
	}
	return string(body)
}

// BenchmarkMintAgentTokenHTTP is a whole mint over loopback HTTP: the
// stages, the store reads, signing and the audit record's commit.
func BenchmarkMintAgentTokenHTTP(b *testing.B) {
	h, session, agent := benchTokenHarness(b)
	mint := func() *http.Request {
		r, _ := http.NewRequest("POST", h.url+"/api/v2/sessions/"+session+"/agents/"+agent+"/token", strings.NewReader(`{"audience":"fs"}`))
		r.Header.Set("Authorization", "Bearer "+axKey("uma"))
		r.Header.Set("Content-Type", "application/json")
		return r
	}
	b.ReportAllocs()
	for b.Loop() {
		benchPost(b, mint)
	}
}

// BenchmarkExchangeAgentTokenHTTP is a whole exchange over loopback HTTP,
// which also creates the sub-agent.
func BenchmarkExchangeAgentTokenHTTP(b *testing.B) {
	h, session, agent := benchTokenHarness(b)
	r, _ := http.NewRequest("POST", h.url+"/api/v2/sessions/"+session+"/agents/"+agent+"/token", strings.NewReader(`{"audience":"fs"}`))
	r.Header.Set("Authorization", "Bearer "+axKey("uma"))
	r.Header.Set("Content-Type", "application/json")
	body := benchPost(b, func() *http.Request { return r })
	parent := body[strings.Index(body, `"access_token":"`)+16:]
	parent = parent[:strings.IndexByte(parent, '"')]
	form := url.Values{"grant_type": {grantTokenExchange}, "subject_token_type": {tokenTypeJWT}, "subject_token": {parent}, "scope": {"fs.read"}}.Encode()
	exchange := func() *http.Request {
		r, _ := http.NewRequest("POST", h.url+tokenEndpoint, strings.NewReader(form))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return r
	}
	b.ReportAllocs()
	for b.Loop() {
		benchPost(b, exchange)
	}
}
