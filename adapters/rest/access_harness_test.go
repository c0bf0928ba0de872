package rest

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/golang/mock/gomock"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/agenttoken"
	"github.com/agentauth/agentauth/adapters/auditlog"
	"github.com/agentauth/agentauth/adapters/auditsign"
	"github.com/agentauth/agentauth/adapters/identity/apikey"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
	"github.com/agentauth/agentauth/ports/mocks"
)

// The callers of the access tests: the four built-in roles, a second USER
// and a custom role from configuration (SECOPS extends AUDITOR with
// policies:write), each with its own API key.
var axCallers = []struct {
	key, subject string
	role         domain.Role
}{
	{"ax-admin-key-00000001", "adm", domain.RoleAdmin},
	{"ax-user-key-000000001", "uma", domain.RoleUser},
	{"ax-lead-key-000000001", "lea", domain.RoleLead},
	{"ax-auditor-key-000001", "aud", domain.RoleAuditor},
	{"ax-secops-key-0000001", "sec", "SECOPS"},
	{"ax-user2-key-00000001", "bob", domain.RoleUser},
}

func axKey(subject string) string {
	for _, c := range axCallers {
		if c.subject == subject {
			return c.key
		}
	}
	panic("no caller " + subject)
}

var axCustomRoles = []domain.CustomRole{{Name: "SECOPS", Extends: domain.RoleAuditor, Permissions: []domain.Permission{domain.PermPoliciesWrite}}}

// axIssuer is the harness's agent-token issuer.
const axIssuer = "https://agentauth.test"

type axHarness struct {
	path  string
	url   string
	srv   *Server
	store *SQLite
	authz *domain.Authorizer
	stop  func()
}

// axOptions adjust the harness: the OAuth endpoints' rate limit and its
// clock, and the bound on a session's sub-agents (zero: the defaults).
type axOptions struct {
	rate         int
	now          func() time.Time
	maxSubAgents int
	// issuer replaces axIssuer; basePath is Config.BasePath; public, when
	// set, is the public listener.
	issuer, basePath string
	public           net.Listener
	// gateway adds the MCP gateway: the flow and its edge.
	gateway *axGateway
	// authn wraps the API keys' authenticator (other credentials).
	authn func(ports.Authenticator) ports.Authenticator
	// auditTable keeps the audit records in the store's table instead of
	// the log SQLite mode writes (see openSQLiteTable).
	auditTable bool
	// inMemory keeps the registry and the session records in memory on the
	// store's watcher, as the service does (wire's application).
	inMemory bool
	// upstream is the authorization servers of people's connections; nil:
	// one that discovers every server and grants whatever it is asked
	// (axUpstream).
	upstream ports.UpstreamAuthorizer
}

// axConnectionsKey seals the harness's connections.
var axConnectionsKey = []byte("0123456789abcdef0123456789abcdef")

// axUpstream is an authorization server for every server with
// upstream_auth: it discovers it, sends browsers to as.example, grants
// every code and takes every revocation.
func axUpstream(t testing.TB) ports.UpstreamAuthorizer {
	m := mocks.NewMockUpstreamAuthorizer(gomock.NewController(t))
	m.EXPECT().Discover(gomock.Any(), gomock.Any()).DoAndReturn(func(_ context.Context, sv domain.Server) (ports.UpstreamAS, error) {
		return ports.UpstreamAS{Issuer: "https://as.example/", AuthURL: "https://as.example/authorize", TokenURL: "https://as.example/token",
			RevocationURL: "https://as.example/revoke", ClientID: sv.UpstreamAuth.ClientID}, nil
	}).AnyTimes()
	m.EXPECT().AuthCodeURL(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any()).DoAndReturn(func(as ports.UpstreamAS, state, _, redirect string) string {
		return as.AuthURL + "?" + url.Values{"state": {state}, "redirect_uri": {redirect}}.Encode()
	}).AnyTimes()
	m.EXPECT().ExchangeCode(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any()).Return(
		ports.UpstreamTokens{AccessToken: "upstream-access-token-value", RefreshToken: "upstream-refresh-token-value", Expiry: time.Now().Add(time.Hour),
			Scopes: []string{"repo"}, Subject: "upstream-sub"}, nil).AnyTimes()
	m.EXPECT().Revoke(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any()).Return(true, nil).AnyTimes()
	return m
}

// axStart serves the full access model on a 127.0.0.1 port over the SQLite
// file at path (created when absent).
// axGateway is the MCP gateway of a harness: its flow's settings and its
// edge's configuration.
type axGateway struct {
	mcp  app.MCPSettings
	edge Gateway
}

func axStart(t testing.TB, path string, opts ...axOptions) *axHarness {
	t.Helper()
	log := zap.NewNop()
	var opt axOptions
	if len(opts) > 0 {
		opt = opts[0]
	}
	open := OpenSQLite
	if opt.auditTable {
		open = openSQLiteTable
	}
	store, closeStore, err := open(path, log)
	if err != nil {
		t.Fatal(err)
	}
	// Checkpoints every 5 records (and at stop), signed with a key kept
	// next to the database, so a restarted harness verifies with it.
	signer, closeSigner, err := auditsign.New(store, auditsign.Settings{DataDir: filepath.Dir(path), Every: 5, Interval: time.Hour, Out: io.Discard}, log)
	if err != nil {
		t.Fatal(err)
	}
	audit, closeAudit := auditlog.New(store, auditlog.Options{Observer: signer}, log)
	authz, err := domain.NewAuthorizer(axCustomRoles)
	if err != nil {
		t.Fatal(err)
	}
	var entries []apikey.Entry
	for _, c := range axCallers {
		entries = append(entries, apikey.Entry{Key: c.key, Principal: domain.Principal{Subject: c.subject, Roles: []domain.Role{c.role}, Method: domain.MethodAPIKey, RoleSource: "test"}})
	}
	issuer := axIssuer
	if opt.issuer != "" {
		issuer = opt.issuer
	}
	keys, err := agenttoken.New(agenttoken.Settings{Issuer: issuer, DataDir: filepath.Dir(path)})
	if err != nil {
		t.Fatal(err)
	}
	limits := app.AgentTokenLimits{MaxTTL: 15 * time.Minute, MaxSubAgents: 1000}
	if opt.maxSubAgents > 0 {
		limits.MaxSubAgents = opt.maxSubAgents
	}
	rate := RateLimit{PerMinute: 10000, Now: opt.now}
	if opt.rate > 0 {
		rate.PerMinute = opt.rate
	}
	clock := app.SystemClock{}
	managed, err := app.NewAPIKeys(app.APIKeysConfig{MaxTTL: 90 * 24 * time.Hour, MaxPerOwner: 5}, store, store, authz, clock)
	if err != nil {
		t.Fatal(err)
	}
	hub, stopHub := app.NewWatchHub(store)
	stopKeys := managed.KeepInMemory(hub)
	var authn ports.Authenticator = apikey.NewKeyring(entries)
	if opt.authn != nil {
		authn = opt.authn(authn)
	}
	var mcp *app.MCPSettings
	if opt.gateway != nil {
		mcp = &opt.gateway.mcp
	}
	upstream := opt.upstream
	if upstream == nil {
		upstream = axUpstream(t)
	}
	uc := app.NewApplication(app.Dependencies{Stores: store.Stores(), Authenticator: authn, Authorizer: authz,
		AuditLog: audit, Clock: clock, Signer: keys, AgentTokenLimits: limits, AuditKey: signer.PublicKey(), Keys: managed, MCP: mcp,
		Connections: &app.ConnectionsSettings{Authorizer: upstream, Config: app.ConnectionsConfig{Keys: [][]byte{axConnectionsKey},
			Base: "http://agentauth.test", RefreshBefore: time.Minute, Lease: time.Second, Poll: 10 * time.Millisecond}}})
	stopMemory := func() {}
	if opt.inMemory {
		stopRegistry, stopRecords := uc.Registry.KeepInMemory(hub), uc.Records.KeepInMemory(hub)
		stopMemory = func() { stopRegistry(); stopRecords() }
	}
	cfg := Config{ShutdownTimeout: time.Second, AgentTokens: &AgentTokens{Keys: keys, RateLimit: rate}, BasePath: opt.basePath}
	if opt.gateway != nil {
		cfg.Gateway = &opt.gateway.edge
	}
	srv, err := New(cfg, uc, log)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ServeListeners(ctx, ln, nil, opt.public) }()
	h := &axHarness{path: path, url: "http://" + ln.Addr().String(), srv: srv, store: store, authz: authz}
	stopped := false
	h.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		stopKeys()
		stopMemory()
		stopHub()
		closeAudit()
		closeSigner()
		closeStore()
	}
	t.Cleanup(h.stop)
	return h
}

func axNew(t *testing.T) *axHarness {
	return axStart(t, filepath.Join(t.TempDir(), "agentauth.db"))
}

type axResponse struct {
	status   int
	body     []byte
	location string
}

func (r axResponse) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("body %q is not JSON: %v", r.body, err)
	}
}

// errorOf decodes the error body; a console page's 403 is read as the
// page names it.
func (r axResponse) errorOf(t *testing.T) errorDetail {
	t.Helper()
	if bytes.HasPrefix(r.body, []byte("<!doctype html>")) {
		m := regexp.MustCompile(`needs the permission <code>([a-z:]+)</code>`).FindSubmatch(r.body)
		if m == nil || !bytes.Contains(r.body, []byte("<h1>Not allowed</h1>")) {
			t.Fatalf("403 page does not name the missing permission: %s", r.body)
		}
		return errorDetail{ReasonCode: domain.ReasonRoleLacksPermission, Missing: string(m[1]), Reason: string(m[0])}
	}
	var oauth struct {
		Error       any    `json:"error"`
		Description string `json:"error_description"`
		ReasonCode  string `json:"reason_code"`
	}
	r.decode(t, &oauth)
	if code, ok := oauth.Error.(string); ok { // an /oauth2/* answer (RFC 6749 §5.2)
		return errorDetail{Code: code, Message: oauth.Description, ReasonCode: oauth.ReasonCode}
	}
	var e errorBody
	r.decode(t, &e)
	return e.Error
}

// axClient follows redirects on the harness's own host only, and none of
// the connect flow's: those are answered as they are.
var axClient = &http.Client{CheckRedirect: func(req *http.Request, via []*http.Request) error {
	switch {
	case req.URL.Host != via[0].URL.Host || strings.HasPrefix(via[0].URL.Path, "/connect/"):
		return http.ErrUseLastResponse
	case len(via) >= 10:
		return fmt.Errorf("stopped after 10 redirects")
	}
	return nil
}}

// do sends a request as subject ("" for none).
func (h *axHarness) do(t testing.TB, subject, method, path, body string) axResponse {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, h.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if subject != "" {
		req.Header.Set("Authorization", "Bearer "+axKey(subject))
	}
	switch {
	case body != "" && strings.HasPrefix(path, "/console/"):
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded") // the console's forms
	case body != "":
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := axClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return axResponse{status: res.StatusCode, body: b, location: res.Header.Get("Location")}
}

// must sends a request and fails unless it answers want; it returns the
// decoded JSON object.
func (h *axHarness) must(t *testing.T, want int, subject, method, path, body string) map[string]any {
	t.Helper()
	r := h.do(t, subject, method, path, body)
	if r.status != want {
		t.Fatalf("%s %s as %s = %d %s, want %d", method, path, subject, r.status, r.body, want)
	}
	out := map[string]any{}
	if len(r.body) > 0 && r.body[0] == '{' {
		r.decode(t, &out)
	}
	return out
}

// snapshot dumps every working-data table (all but the audit log, its
// checkpoints and the migrations table) of the database, to show that a refused call changed
// nothing.
func (h *axHarness) snapshot(t *testing.T) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+h.path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The audit tables are left out: every call is recorded, and the log's
	// index (and the intents its records settle) is written after the
	// answer, when the indexer runs.
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'audit%' AND name != 'schema_migrations' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	var b strings.Builder
	for _, table := range tables {
		rs, err := db.Query(`SELECT * FROM "` + table + `"`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rs.Columns()
		var lines []string
		for rs.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rs.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, fmt.Sprint(vals...))
		}
		rs.Close()
		sort.Strings(lines)
		fmt.Fprintf(&b, "%s:\n%s\n", table, strings.Join(lines, "\n"))
	}
	return b.String()
}
