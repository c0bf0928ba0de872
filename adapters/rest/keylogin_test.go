package rest_test

import (
	"context"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/auditlog"
	"github.com/agentauth/agentauth/adapters/rest"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

// startKeyLogin serves as local, API-key and debug modes do: the ring
// checks Bearer keys and the keys exchanged at POST /auth/key, and the
// cookie goes to the login sessions.
func startKeyLogin(t *testing.T) (string, *rest.SQLite) {
	t.Helper()
	log := zap.NewNop()
	store, closeStore, err := rest.OpenSQLite(filepath.Join(t.TempDir(), "agentauth.db"), log)
	if err != nil {
		t.Fatal(err)
	}
	audit, closeAudit := auditlog.New(store, auditlog.Options{}, log)
	authz, _ := domain.NewAuthorizer(nil)
	cfg := testLoginCfg
	cfg.PasswordLogin, cfg.Method = false, domain.MethodAPIKey
	uc, err := app.NewKeyLogin(cfg, testKeyring(), store, store, app.SystemClock{})
	if err != nil {
		t.Fatal(err)
	}
	authn := &app.Credentials{Login: uc, Keys: testKeyring()}
	srv, err := rest.New(rest.Config{ShutdownTimeout: time.Second, Login: rest.NewKeyLogin(rest.KeyLoginConfig{}, log)}, app.NewApplication(app.Dependencies{Stores: store.Stores(),
		Authenticator: authn, Authorizer: authz, AuditLog: audit, Clock: app.SystemClock{}, Login: uc}), log)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done; closeAudit(); closeStore() })
	return "http://" + ln.Addr().String(), store
}

func TestKeySignIn(t *testing.T) {
	base, store := startKeyLogin(t)
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Accept": browserAccept}
	with := func(extra map[string]string) map[string]string {
		h := map[string]string{}
		for k, v := range form {
			h[k] = v
		}
		for k, v := range extra {
			h[k] = v
		}
		return h
	}
	tests := []struct {
		name     string
		headers  map[string]string
		body     string
		status   int
		location string // of a 303
		has      string // in the page of a refusal
		cookie   bool
	}{
		{"a browser's form: redirected to return_to with the cookie", form, "key=" + keyLead + "&return_to=%2Fconsole%2Fsessions", 303, "/console/sessions", "", true},
		{"return_to of another site: the console instead", form, "key=" + keyLead + "&return_to=%2F%2Fevil.example", 303, "/console/", "", true},
		{"a wrong key: the sign-in page says so", form, "key=not-a-key-of-ours", 401, "", "This key is not valid here", false},
		{"no key", form, "key=", 401, "", "This key is not valid here", false},
		{"a cross-origin form (login CSRF)", with(map[string]string{"Sec-Fetch-Site": "cross-site"}), "key=" + keyLead, 403, "", "refused", false},
		{"another Origin", with(map[string]string{"Origin": "http://evil.example"}), "key=" + keyLead, 403, "", "refused", false},
		{"a script's JSON", map[string]string{"Content-Type": "application/json"}, `{"key":"` + keyLead + `"}`, 200, "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jar, _ := cookiejar.New(nil)
			resp, body := send(t, client(jar), http.MethodPost, base+"/auth/key", tt.headers, tt.body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status: got %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
			if got := resp.Header.Get("Location"); got != tt.location {
				t.Errorf("Location: got %q, want %q", got, tt.location)
			}
			if tt.has != "" && !strings.Contains(body, tt.has) {
				t.Errorf("page lacks %q: %s", tt.has, body)
			}
			u, _ := url.Parse(base)
			var session *http.Cookie
			for _, c := range jar.Cookies(u) {
				if c.Name == rest.SessionCookie {
					session = c
				}
			}
			if (session != nil) != tt.cookie {
				t.Fatalf("session cookie set: got %v, want %v", session != nil, tt.cookie)
			}
			if session == nil {
				return
			}
			if strings.Contains(session.Value, keyLead) {
				t.Errorf("the cookie carries the key")
			}
			if resp, body := send(t, client(jar), http.MethodGet, base+"/api/v2/me", nil, ""); resp.StatusCode != 200 ||
				!strings.Contains(body, `"subject":"lead"`) || !strings.Contains(body, `"method":"api_key"`) {
				t.Errorf("/api/v2/me with the cookie: got %d %s, want lead by api_key", resp.StatusCode, body)
			}
			if resp, _ := send(t, client(jar), http.MethodPost, base+"/auth/logout", map[string]string{"Accept": browserAccept}, ""); resp.StatusCode != 303 ||
				resp.Header.Get("Location") != "/?signed_out=1" {
				t.Errorf("sign-out: got %d to %q, want 303 to /?signed_out=1", resp.StatusCode, resp.Header.Get("Location"))
			}
			if resp, _ := send(t, client(jar), http.MethodGet, base+"/api/v2/me", map[string]string{"Cookie": rest.SessionCookie + "=" + session.Value}, ""); resp.StatusCode != 401 {
				t.Errorf("the cookie after sign-out: got %d, want 401", resp.StatusCode)
			}
		})
	}
	// Every attempt is in the audit log: the sign-ins allowed under their
	// subject, the refusals denied.
	recs, err := store.QueryAudit(context.Background(), ports.AuditQuery{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	var allowed, denied int
	for _, r := range recs {
		if r.Path != "/auth/key" {
			continue
		}
		switch {
		case r.Decision == domain.AuditAllow && r.Subject == "lead" && strings.Contains(r.Reason, "login session started"):
			allowed++
		case r.Decision == domain.AuditDeny:
			denied++
		}
	}
	if allowed != 3 || denied != 4 {
		t.Errorf("audit records of POST /auth/key: %d allowed, %d denied; want 3 and 4", allowed, denied)
	}
}
