package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentauth/agentauth/adapters/auditjson"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/mcpwire"
	"github.com/agentauth/agentauth/ports"
)

// gwIdP stands in for the identity provider's authenticator beside the
// harness's API keys: each Bearer token below is uma's access token with
// the aud it names (as the OIDC adapter reports it: resource-only when
// the aud does not name the client), and the cookie is uma's login
// session (no aud). gwLocalKey is a key as local mode's keyring reports it
// (uma's here, so that the policy of gwWorld decides it).
type gwIdP struct{ keys ports.Authenticator }

const (
	gwCookie   = "uma-login-session"
	gwLocalKey = "uma-local-mode-key"
)

var gwIdPTokens = map[string][]string{
	"idp-token-for-resource": {"agentauth", gwResourceBase + "/mcp/fs"},
	"idp-token-for-client":   {"agentauth"},
	"idp-token-for-other":    {gwResourceBase + "/mcp/other"},
	"idp-token-fs-only":      {gwResourceBase + "/mcp/fs"},
}

func (a gwIdP) Authenticate(ctx context.Context, cred ports.Credential) (domain.Principal, error) {
	uma := domain.Principal{Subject: "uma", Roles: []domain.Role{domain.RoleUser}, Method: domain.MethodOIDC, RoleSource: "test idp"}
	switch aud, ok := gwIdPTokens[cred.Value]; {
	case cred.Kind == ports.CredentialBearer && ok:
		uma.Audience, uma.ResourceOnly = aud, !slices.Contains(aud, "agentauth")
		return uma, nil
	case cred.Kind == ports.CredentialCookie && cred.Value == gwCookie:
		return uma, nil
	case cred.Kind == ports.CredentialBearer && cred.Value == gwLocalKey:
		uma.Method, uma.RoleSource = domain.MethodLocal, "local key"
		return uma, nil
	}
	return a.keys.Authenticate(ctx, cred)
}

// headers adds headers to every request.
type headers struct {
	h    map[string]string
	next http.RoundTripper
}

func (hd headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range hd.h {
		r.Header.Set(k, v)
	}
	return hd.next.RoundTrip(r)
}

// TestGatewayCallers: every kind of credential at the gateway — allowed
// (tools/list filtered, an allowed call forwarded, a denied one refused
// without reaching the server), refused for another server or resource,
// refused without the permission or without naming an agent — each
// decided with its own roles and audited with its chain.
func TestGatewayCallers(t *testing.T) {
	u := newGWUpstream(t)
	h := gwStart(t, axOptions{authn: func(keys ports.Authenticator) ports.Authenticator { return gwIdP{keys} }}, 10*time.Second)
	session, agent, token := gwWorld(t, h, u)
	otherAgent := h.must(t, 201, "uma", "POST", "/api/v2/sessions/"+session+"/agents", "")["id"].(string)
	otherToken := gwToken(t, h, session, otherAgent, "other")
	key := func(perms string) string {
		return h.must(t, 201, "uma", "POST", "/api/v2/keys", `{"name":"mcp","permissions":[`+perms+`],"expires_at":"`+expiresIn(time.Hour)+`"}`)["key"].(string)
	}
	managed := key(`"sessions:write","toolcalls:write"`)
	narrow := key(`"sessions:write"`)
	named := map[string]string{HeaderGatewaySession: session, HeaderGatewayAgent: agent}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	and := func(a, b map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range a {
			m[k] = v
		}
		for k, v := range b {
			m[k] = v
		}
		return m
	}
	bearerOf := func(v string) map[string]string { return with("Authorization", "Bearer "+v) }
	cookie := with("Cookie", SessionCookie+"="+gwCookie)

	tests := []struct {
		name    string
		headers map[string]string
		status  int    // of initialize
		reason  string // reason_code of a refusal
	}{
		{"agent token for fs", bearerOf(token), 200, ""},
		{"agent token for another server", bearerOf(otherToken), 403, domain.ReasonGatewayOtherServer},
		{"provider token for the resource", and(bearerOf("idp-token-for-resource"), named), 200, ""},
		{"provider token for the client only", and(bearerOf("idp-token-for-client"), named), 403, domain.ReasonGatewayResource},
		{"provider token for another resource", and(bearerOf("idp-token-for-other"), named), 403, domain.ReasonTokenGatewayOnly},
		{"provider token for the resource only", and(bearerOf("idp-token-fs-only"), named), 200, ""},
		{"managed key", and(bearerOf(managed), named), 200, ""},
		{"managed key without toolcalls:write", and(bearerOf(narrow), named), 403, domain.ReasonKeyLacksPermission},
		{"managed key naming no agent", bearerOf(managed), 403, domain.ReasonGatewayAgentNamed},
		{"API key", and(bearerOf(axKey("uma")), named), 200, ""},
		{"API key naming only the session", and(bearerOf(axKey("uma")), with(HeaderGatewaySession, session)), 403, domain.ReasonGatewayAgentNamed},
		{"API key of another user", and(bearerOf(axKey("bob")), named), 404, ""},
		{"local mode's key", and(bearerOf(gwLocalKey), named), 200, ""},
		{"API key without toolcalls:write (AUDITOR)", and(bearerOf(axKey("aud")), named), 403, domain.ReasonRoleLacksPermission},
		{"API key naming an agent of no such session", and(bearerOf(axKey("uma")), with(HeaderGatewaySession, session, HeaderGatewayAgent, "agent_none")), 404, ""},
		{"cookie", and(cookie, named), 200, ""},
		{"cookie, cross-site", and(and(cookie, named), with("Sec-Fetch-Site", "cross-site")), 403, "request_refused"},
		{"no credential", named, 401, ""},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.status != 200 {
				req, _ := http.NewRequest("POST", h.url+"/mcp/fs", strings.NewReader(gwInitialize))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				for k, v := range tt.headers {
					req.Header.Set(k, v)
				}
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				var e struct {
					Error errorDetail `json:"error"`
				}
				_ = json.Unmarshal(body, &e)
				if res.StatusCode != tt.status || e.Error.ReasonCode != tt.reason {
					t.Errorf("initialize = %d %s, want %d %q", res.StatusCode, body, tt.status, tt.reason)
				}
				if tt.status == 401 && !strings.Contains(res.Header.Get("WWW-Authenticate"), "resource_metadata=") {
					t.Errorf("401 without resource_metadata: %q", res.Header.Get("WWW-Authenticate"))
				}
				return
			}
			client := mcp.NewClient(&mcp.Implementation{Name: "caller-test", Version: "1.0.0"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: h.url + "/mcp/fs", MaxRetries: -1,
				HTTPClient: &http.Client{Transport: headers{tt.headers, http.DefaultTransport}}}, nil)
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer cs.Close()
			if names, want := gwListed(t, ctx, cs), []string{"fs.read", "fs.write"}; !slices.Equal(names, want) {
				t.Errorf("tools/list = %v, want %v", names, want)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs.read", Arguments: map[string]any{"path": "/" + tt.name}})
			if err != nil || toolText(t, res) != "fs.read ran on /"+tt.name {
				t.Errorf("fs.read = %+v, %v", res, err)
			}
			_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs.delete", Arguments: map[string]any{"path": "/" + tt.name}})
			if code, reason := gwRPCError(t, err); code != mcpwire.CodeDenied || reason != domain.ReasonPolicyDeny {
				t.Errorf("fs.delete: error %d %s, want %d %s", code, reason, mcpwire.CodeDenied, domain.ReasonPolicyDeny)
			}
		})
	}
	// A call that asks is held for the person's approval as for an agent
	// token, stored as requested by the caller, and released once approved.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "caller-test", Version: "1.0.0"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: h.url + "/mcp/fs", MaxRetries: -1, HTTPClient: &http.Client{Transport: headers{and(bearerOf(managed), named), http.DefaultTransport}}},
		&mcp.ClientSessionOptions{ProtocolVersion: gwLegacy})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	held := make(chan error, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs.write", Arguments: map[string]any{"path": "/held"}})
		if err == nil && (len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "fs.write ran on /held") {
			err = fmt.Errorf("result %+v", res)
		}
		held <- err
	}()
	id := gwPending(t, h, session, "fs.write")
	if c, err := h.store.GetToolCall(ctx, id); err != nil || c.RequestedBy != "uma" || c.Agent != agent {
		t.Errorf("held call %+v, %v: want requested by uma for %s", c, err, agent)
	}
	h.must(t, 200, "adm", "POST", "/api/v2/sessions/"+session+"/tool-calls/"+id+"/approve", "")
	if err := <-held; err != nil {
		t.Errorf("approved fs.write: %v", err)
	}

	for _, r := range u.ran() {
		if strings.HasPrefix(r, "fs.delete") {
			t.Errorf("the server ran a denied call: %s", r)
		}
	}

	// Each caller's calls are audited with who called, how, and for which agent.
	var page struct {
		Records []auditjson.Record `json:"records"`
	}
	h.do(t, "adm", "GET", "/api/v2/audit?limit=1000", "").decode(t, &page)
	chains := map[string]bool{
		"chain uma → " + agent + ";":                       false,
		"chain uma (oidc) → " + agent + ";":                false,
		"chain uma (api_key) → " + agent + ";":             false,
		"chain uma (local) → " + agent + ";":               false,
		"chain uma (managed_key key ":                      false,
		"then: " + domain.ReasonGatewayResource + ":":      false,
		"decision deny; reason " + domain.ReasonPolicyDeny: false,
	}
	for _, rec := range page.Records {
		for k := range chains {
			if strings.Contains(rec.Reason, k) {
				chains[k] = true
			}
		}
	}
	for k, found := range chains {
		if !found {
			t.Errorf("no audit record with %q", k)
		}
	}
}
