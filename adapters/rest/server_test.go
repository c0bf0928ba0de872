package rest_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/auditlog"
	"github.com/agentauth/agentauth/adapters/identity/apikey"
	"github.com/agentauth/agentauth/adapters/rest"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// Keys of the test keyring: one per built-in role, and a second user.
const (
	keyAdmin   = "test-admin-key-0001"
	keyUser    = "test-user-key-00001"
	keyUser2   = "test-user2-key-0001"
	keyLead    = "test-lead-key-00001"
	keyAuditor = "test-auditor-key-01"
)

func testKeyring() *apikey.Keyring {
	entry := func(key, subject string, role domain.Role) apikey.Entry {
		return apikey.Entry{Key: key, Principal: domain.Principal{Subject: subject, Roles: []domain.Role{role}, Method: domain.MethodAPIKey, RoleSource: "test"}}
	}
	return apikey.NewKeyring([]apikey.Entry{
		entry(keyAdmin, "admin", domain.RoleAdmin),
		entry(keyUser, "user", domain.RoleUser),
		entry(keyUser2, "user2", domain.RoleUser),
		entry(keyLead, "lead", domain.RoleLead),
		entry(keyAuditor, "auditor", domain.RoleAuditor),
	})
}

type harness struct {
	url    string
	store  *rest.SQLite
	srv    *rest.Server
	dbPath string // the store's file
}

type options struct {
	debug bool
	// stopAtOnce cancels the server's context before it starts serving.
	stopAtOnce bool
	// routes adds test routes before the server starts serving (Fiber's
	// router must not change while it serves).
	routes   func(*fiber.App)
	auditLog func(ports.AuditStore) ports.AuditLog // nil: the real group committer
	// trustedProxies is rest.Config.TrustedProxies.
	trustedProxies []netip.Prefix
	// log receives the server's log; nil: none.
	log *zap.Logger
	// redactor is rest.Config.Redactor.
	redactor *domain.TargetRedactor
}

// start runs a real server on a 127.0.0.1 port with a real SQLite store.
func start(t *testing.T, opt options) harness {
	t.Helper()
	log := opt.log
	if log == nil {
		log = zap.NewNop()
	}
	dbPath := filepath.Join(t.TempDir(), "agentauth.db")
	store, closeStore, err := rest.OpenSQLite(dbPath, log)
	if err != nil {
		t.Fatal(err)
	}
	var audit ports.AuditLog
	closeAudit := func() {}
	if opt.auditLog != nil {
		audit = opt.auditLog(store)
	} else {
		audit, closeAudit = auditlog.New(store, auditlog.Options{}, log)
	}
	authz, err := domain.NewAuthorizer(nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := rest.New(rest.Config{ShutdownTimeout: time.Second, Debug: opt.debug, TrustedProxies: opt.trustedProxies, Redactor: opt.redactor}, app.NewApplication(app.Dependencies{
		Stores: store.Stores(), Authenticator: testKeyring(), Authorizer: authz, AuditLog: audit, Clock: app.SystemClock{}}), log)
	if err != nil {
		t.Fatal(err)
	}
	if opt.routes != nil {
		opt.routes(srv.App())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if opt.stopAtOnce {
		cancel()
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	if opt.stopAtOnce {
		select {
		case err := <-done:
			done <- err // for the cleanup below
		case <-time.After(20 * time.Second):
			t.Fatal("Serve did not return after a stop that came before it started serving")
		}
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		closeAudit()
		closeStore()
	})
	return harness{url: "http://" + ln.Addr().String(), store: store, srv: srv, dbPath: dbPath}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("body %q is not JSON: %v", r.body, err)
	}
}

// errBody is the one error shape.
type errBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Reason  string `json:"reason"`
		Missing string `json:"missing"`
	} `json:"error"`
	RequestID string `json:"request_id"`
}

func (h harness) do(t *testing.T, method, path, auth, body string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, h.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: b}
}

func bearer(key string) string { return "Bearer " + key }

// checkError asserts the one error body shape and its request id.
func checkError(t *testing.T, r response, wantStatus int, wantCode string) errBody {
	t.Helper()
	if r.status != wantStatus {
		t.Fatalf("status = %d, want %d (body %s)", r.status, wantStatus, r.body)
	}
	var e errBody
	r.json(t, &e)
	if e.Error.Code != wantCode || e.Error.Message == "" {
		t.Errorf("error = %+v, want code %q and a message", e.Error, wantCode)
	}
	if e.RequestID == "" || e.RequestID != r.header.Get(rest.HeaderRequestID) {
		t.Errorf("request_id = %q, header %q: want equal and not empty", e.RequestID, r.header.Get(rest.HeaderRequestID))
	}
	return e
}

// TestStopBeforeServing: a SIGTERM right after start must still end the
// server (a shutdown before the listener is taken over used to be lost).
func TestStopBeforeServing(t *testing.T) {
	for range 20 {
		start(t, options{stopAtOnce: true})
	}
}

func TestHealthIsPublic(t *testing.T) {
	h := start(t, options{})
	r := h.do(t, "GET", "/health", "", "")
	if r.status != 200 || string(r.body) != `{"status":"ok"}` {
		t.Errorf("GET /health = %d %s, want 200 {\"status\":\"ok\"}", r.status, r.body)
	}
}

func TestUnauthenticatedIs401Everywhere(t *testing.T) {
	h := start(t, options{})
	tests := []struct {
		method, path, auth string
		wantChallenge      string
	}{
		{"GET", "/api/v2/sessions", "", `Bearer realm="agentauth"`},
		{"POST", "/api/v2/sessions", "", `Bearer realm="agentauth"`},
		{"GET", "/api/v2/me", "", `Bearer realm="agentauth"`},
		{"GET", "/api/v2/audit", "", `Bearer realm="agentauth"`},
		{"PUT", "/api/v2/admin/settings", "", `Bearer realm="agentauth"`},
		{"GET", "/no/such/path", "", `Bearer realm="agentauth"`},
		{"DELETE", "/", "", `Bearer realm="agentauth"`},
		{"POST", "/health", "", `Bearer realm="agentauth"`},
		{"GET", "/api/v2/sessions", bearer("wrong-key-wrong-key"), `Bearer realm="agentauth", error="invalid_token"`},
		{"GET", "/no/such/path", bearer("wrong-key-wrong-key"), `Bearer realm="agentauth", error="invalid_token"`},
		{"GET", "/api/v2/sessions", "Bearer ", `Bearer realm="agentauth", error="invalid_token"`},
		{"GET", "/api/v2/sessions", "Basic " + keyAdmin, `Bearer realm="agentauth", error="invalid_token"`},
		{"GET", "/api/v2/sessions", keyAdmin, `Bearer realm="agentauth", error="invalid_token"`},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path+" "+tt.auth, func(t *testing.T) {
			r := h.do(t, tt.method, tt.path, tt.auth, "")
			checkError(t, r, 401, "unauthenticated")
			if got := r.header.Get("WWW-Authenticate"); got != tt.wantChallenge {
				t.Errorf("WWW-Authenticate = %q, want %q", got, tt.wantChallenge)
			}
		})
	}
}

func TestAuthenticatedUnknownPathIs404(t *testing.T) {
	h := start(t, options{})
	for _, path := range []string{"/nope", "/api/v2/nope", "/api/v3/sessions"} {
		checkError(t, h.do(t, "GET", path, bearer(keyUser), ""), 404, "not_found")
	}
}

// TestSpecAuthorizationRules checks the spec's rules endpoint by endpoint:
// admin endpoints need ADMIN, audit endpoints AUDITOR or ADMIN, and the
// sessions endpoint answers 200 when the key is accepted.
func TestSpecAuthorizationRules(t *testing.T) {
	h := start(t, options{})
	settings := `{"security_gateway":false,"default_session_mode":"ask"}`
	tests := []struct {
		method, path, body string
		want               map[string]int // key → status
	}{
		{"GET", "/api/v2/sessions", "", map[string]int{keyAdmin: 200, keyUser: 200, keyLead: 200, keyAuditor: 200}},
		{"GET", "/api/v2/me", "", map[string]int{keyAdmin: 200, keyUser: 200, keyLead: 200, keyAuditor: 200}},
		{"GET", "/api/v2/audit", "", map[string]int{keyAdmin: 200, keyUser: 403, keyLead: 403, keyAuditor: 200}},
		{"GET", "/api/v2/admin/settings", "", map[string]int{keyAdmin: 200, keyUser: 403, keyLead: 403, keyAuditor: 403}},
		{"PUT", "/api/v2/admin/settings", settings, map[string]int{keyAdmin: 200, keyUser: 403, keyLead: 403, keyAuditor: 403}},
		{"POST", "/api/v2/sessions", `{"title":"x"}`, map[string]int{keyAdmin: 201, keyUser: 201, keyLead: 201, keyAuditor: 403}},
	}
	for _, tt := range tests {
		for key, want := range tt.want {
			t.Run(tt.method+" "+tt.path+" as "+key, func(t *testing.T) {
				r := h.do(t, tt.method, tt.path, bearer(key), tt.body)
				if want == 403 {
					e := checkError(t, r, 403, "forbidden")
					if e.Error.Reason == "" || e.Error.Missing == "" {
						t.Errorf("403 body = %s, want reason and missing permission", r.body)
					}
					return
				}
				if r.status != want {
					t.Errorf("status = %d, want %d (body %s)", r.status, want, r.body)
				}
			})
		}
	}
}

type sessionOut struct {
	ID    string `json:"id"`
	Owner string `json:"owner"`
	Title string `json:"title"`
	Mode  string `json:"mode"`
	State string `json:"state"`
}

func TestSessionsAreStoredAndOwned(t *testing.T) {
	h := start(t, options{})
	create := func(key, title string) sessionOut {
		r := h.do(t, "POST", "/api/v2/sessions", bearer(key), `{"title":"`+title+`","mode":"readonly"}`)
		if r.status != 201 {
			t.Fatalf("create = %d %s", r.status, r.body)
		}
		var s sessionOut
		r.json(t, &s)
		if r.header.Get("Location") != "/api/v2/sessions/"+s.ID {
			t.Errorf("Location = %q, want the new session", r.header.Get("Location"))
		}
		return s
	}
	list := func(key string) []sessionOut {
		r := h.do(t, "GET", "/api/v2/sessions", bearer(key), "")
		var out struct{ Sessions []sessionOut }
		r.json(t, &out)
		return out.Sessions
	}
	mine := create(keyUser, "mine")
	theirs := create(keyUser2, "theirs")
	if mine.Owner != "user" || mine.Mode != "readonly" || mine.State != "active" || mine.Title != "mine" {
		t.Errorf("created %+v", mine)
	}
	if got := list(keyUser); len(got) != 1 || got[0].ID != mine.ID {
		t.Errorf("USER lists %+v, want only its own session", got)
	}
	if got := list(keyAdmin); len(got) != 2 || got[0].ID != theirs.ID {
		t.Errorf("ADMIN lists %+v, want both, newest first", got)
	}
	checkError(t, h.do(t, "GET", "/api/v2/sessions/"+theirs.ID, bearer(keyUser), ""), 404, "not_found")
	checkError(t, h.do(t, "DELETE", "/api/v2/sessions/"+theirs.ID, bearer(keyUser), ""), 404, "not_found")
	if r := h.do(t, "GET", "/api/v2/sessions/"+mine.ID, bearer(keyUser), ""); r.status != 200 {
		t.Errorf("own session = %d", r.status)
	}
	if r := h.do(t, "DELETE", "/api/v2/sessions/"+mine.ID, bearer(keyUser), ""); r.status != 204 {
		t.Errorf("delete own = %d %s", r.status, r.body)
	}
	if r := h.do(t, "DELETE", "/api/v2/sessions/"+theirs.ID, bearer(keyAdmin), ""); r.status != 204 {
		t.Errorf("admin delete = %d %s", r.status, r.body)
	}
	checkError(t, h.do(t, "GET", "/api/v2/sessions/"+theirs.ID, bearer(keyAdmin), ""), 404, "not_found")
	if got := list(keyAdmin); len(got) != 0 {
		t.Errorf("after deletes ADMIN lists %+v", got)
	}
}

func TestBadInputIs400(t *testing.T) {
	h := start(t, options{})
	tests := []struct{ method, path, body string }{
		{"POST", "/api/v2/sessions", `{"title":`},
		{"POST", "/api/v2/sessions", `{"title":"x","owner":"someone-else"}`},
		{"POST", "/api/v2/sessions", `{"mode":"yolo"}`},
		{"POST", "/api/v2/sessions", `{"title":"` + strings.Repeat("x", 201) + `"}`},
		{"POST", "/api/v2/sessions", `{"title":"a"} {"title":"b"}`},
		{"POST", "/api/v2/sessions", `[]`},
		{"GET", "/api/v2/sessions?limit=-1", ""},
		{"GET", "/api/v2/sessions?limit=ten", ""},
		{"GET", "/api/v2/audit?decision=maybe", ""},
		{"GET", "/api/v2/audit?since=yesterday", ""},
		{"GET", "/api/v2/audit?cursor=x", ""},
		{"PUT", "/api/v2/admin/settings", `{"security_gateway":true}`},
		{"PUT", "/api/v2/admin/settings", `{"security_gateway":true,"default_session_mode":"never"}`},
		{"PUT", "/api/v2/admin/settings", `{"security_gateway":"yes","default_session_mode":"ask"}`},
		{"PUT", "/api/v2/admin/settings", ``},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path+" "+tt.body, func(t *testing.T) {
			checkError(t, h.do(t, tt.method, tt.path, bearer(keyAdmin), tt.body), 400, "invalid_request")
		})
	}
	// An empty POST body is refused too (the content type is set only with a body).
	checkError(t, h.do(t, "POST", "/api/v2/sessions", bearer(keyAdmin), ""), 400, "invalid_request")
}

func TestSettingsRoundTrip(t *testing.T) {
	h := start(t, options{})
	r := h.do(t, "GET", "/api/v2/admin/settings", bearer(keyAdmin), "")
	if string(r.body) != `{"security_gateway":false,"default_session_mode":"ask"}` {
		t.Errorf("defaults = %s", r.body)
	}
	want := `{"security_gateway":true,"default_session_mode":"readonly"}`
	if r := h.do(t, "PUT", "/api/v2/admin/settings", bearer(keyAdmin), want); r.status != 200 || string(r.body) != want {
		t.Errorf("PUT = %d %s, want 200 %s", r.status, r.body, want)
	}
	if r := h.do(t, "GET", "/api/v2/admin/settings", bearer(keyAdmin), ""); string(r.body) != want {
		t.Errorf("GET after PUT = %s, want %s", r.body, want)
	}
	// New sessions take the default mode from the settings.
	r = h.do(t, "POST", "/api/v2/sessions", bearer(keyUser), `{"title":"t"}`)
	var s sessionOut
	r.json(t, &s)
	if s.Mode != "readonly" {
		t.Errorf("new session mode = %q, want the configured default readonly", s.Mode)
	}
}

func TestMeExplainsTheCaller(t *testing.T) {
	h := start(t, options{})
	r := h.do(t, "GET", "/api/v2/me", bearer(keyAuditor), "")
	var me struct {
		Subject     string   `json:"subject"`
		Roles       []string `json:"roles"`
		Method      string   `json:"method"`
		RoleSource  string   `json:"role_source"`
		Permissions []string `json:"permissions"`
	}
	r.json(t, &me)
	if me.Subject != "auditor" || len(me.Roles) != 1 || me.Roles[0] != "AUDITOR" || me.Method != "api_key" || me.RoleSource != "test" {
		t.Errorf("me = %+v", me)
	}
	var want []string
	for _, p := range domain.DefaultGrants()[domain.RoleAuditor] {
		want = append(want, string(p))
	}
	if strings.Join(me.Permissions, ",") != strings.Join(want, ",") {
		t.Errorf("permissions = %v, want %v", me.Permissions, want)
	}
}

func TestDebugModeMarksEveryResponse(t *testing.T) {
	for _, debug := range []bool{false, true} {
		h := start(t, options{debug: debug})
		for _, r := range []response{h.do(t, "GET", "/health", "", ""), h.do(t, "GET", "/api/v2/me", "", ""), h.do(t, "GET", "/api/v2/me", bearer(keyUser), "")} {
			got := r.header.Get("X-Auth-Debug")
			if want := map[bool]string{true: "true", false: ""}[debug]; got != want {
				t.Errorf("debug=%v: X-Auth-Debug = %q, want %q", debug, got, want)
			}
		}
	}
}

type auditOut struct {
	Records []struct {
		Seq       int64    `json:"seq"`
		RequestID string   `json:"request_id"`
		Subject   string   `json:"subject"`
		Roles     []string `json:"roles"`
		Method    string   `json:"method"`
		Path      string   `json:"path"`
		Decision  string   `json:"decision"`
		Reason    string   `json:"reason"`
		Status    int      `json:"status"`
	} `json:"records"`
	NextCursor *string `json:"next_cursor"`
}

func TestEveryDecisionIsAudited(t *testing.T) {
	h := start(t, options{})
	type call struct {
		method, path, auth string
		wantDecision       string
		wantStatus         int
		wantSubject        string
		wantReason         string
	}
	calls := []call{
		{"GET", "/api/v2/sessions", "", "deny", 401, "", "unauthenticated"},
		{"GET", "/api/v2/sessions", bearer("not-a-key-not-a-key"), "deny", 401, "", "key not accepted"},
		{"GET", "/api/v2/audit", bearer(keyUser), "deny", 403, "user", "role USER lacks audit:read"},
		{"GET", "/api/v2/sessions", bearer(keyUser), "allow", 200, "user", "role USER grants sessions:read"},
		{"GET", "/nope", bearer(keyLead), "deny", 404, "lead", "Cannot GET /nope"},
	}
	ids := map[string]call{}
	for _, c := range calls {
		r := h.do(t, c.method, c.path, c.auth, "")
		if r.status != c.wantStatus {
			t.Fatalf("%s %s = %d, want %d", c.method, c.path, r.status, c.wantStatus)
		}
		ids[r.header.Get(rest.HeaderRequestID)] = c
	}
	r := h.do(t, "GET", "/api/v2/audit?limit=500", bearer(keyAuditor), "")
	var out auditOut
	r.json(t, &out)
	found := 0
	for _, rec := range out.Records {
		c, ok := ids[rec.RequestID]
		if !ok {
			continue
		}
		found++
		if rec.Decision != c.wantDecision || rec.Status != c.wantStatus || rec.Subject != c.wantSubject || rec.Method != c.method || rec.Path != c.path || !strings.Contains(rec.Reason, c.wantReason) {
			t.Errorf("record %+v, want %+v", rec, c)
		}
	}
	if found != len(calls) {
		t.Errorf("found %d of %d records", found, len(calls))
	}
}

func TestAuditFiltersAndPages(t *testing.T) {
	h := start(t, options{})
	before := time.Now().UTC()
	for range 7 {
		h.do(t, "GET", "/api/v2/sessions", bearer(keyUser), "")
	}
	h.do(t, "GET", "/api/v2/audit", bearer(keyLead), "") // denied
	get := func(query string) auditOut {
		r := h.do(t, "GET", "/api/v2/audit?"+query, bearer(keyAdmin), "")
		if r.status != 200 {
			t.Fatalf("GET /api/v2/audit?%s = %d %s", query, r.status, r.body)
		}
		var out auditOut
		r.json(t, &out)
		return out
	}
	if got := get("subject=user"); len(got.Records) != 7 {
		t.Errorf("subject=user: %d records, want 7", len(got.Records))
	}
	if got := get("decision=deny"); len(got.Records) != 1 || got.Records[0].Subject != "lead" {
		t.Errorf("decision=deny: %+v, want the LEAD refusal", got.Records)
	}
	if got := get("until=" + before.Format(time.RFC3339Nano)); len(got.Records) != 0 {
		t.Errorf("until before the calls: %d records, want 0", len(got.Records))
	}
	if got := get("since=" + before.Format(time.RFC3339Nano) + "&subject=user"); len(got.Records) != 7 {
		t.Errorf("since: %d records, want 7", len(got.Records))
	}
	// Pages of 3 walk all 7 records of user, newest first, without repeats.
	var seqs []int64
	cursor := ""
	for page := 0; page < 5; page++ {
		got := get("subject=user&limit=3" + cursor)
		for _, r := range got.Records {
			seqs = append(seqs, r.Seq)
		}
		if got.NextCursor == nil {
			break
		}
		cursor = "&cursor=" + *got.NextCursor
	}
	if len(seqs) != 7 {
		t.Fatalf("paged through %v, want 7 records", seqs)
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] >= seqs[i-1] {
			t.Errorf("seqs %v are not strictly decreasing", seqs)
		}
	}
}
