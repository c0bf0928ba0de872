package rest_test

import (
	"context"
	"net/http"
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

// cookieAuthn accepts one user_session cookie, as hybrid mode's
// authenticator does for a cookie the central instance issued.
type cookieAuthn struct{}

func (cookieAuthn) Authenticate(_ context.Context, cred ports.Credential) (domain.Principal, error) {
	if cred.Kind == ports.CredentialCookie && cred.Value == "centre-cookie" {
		return domain.Principal{Subject: "u", Roles: []domain.Role{domain.RoleUser}, Method: domain.MethodHybrid}, nil
	}
	return domain.Principal{}, domain.ErrUnauthenticated
}

// TestCSRFOnCookieRequestsWithoutOIDC: outside OIDC mode (hybrid mode
// forwards the central instance's user_session cookie) a cookie is still a
// credential the browser sends by itself, so unsafe requests carrying it
// must come from this origin too.
func TestCSRFOnCookieRequestsWithoutOIDC(t *testing.T) {
	log := zap.NewNop()
	store, closeStore, err := rest.OpenSQLite(filepath.Join(t.TempDir(), "agentauth.db"), log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeStore)
	audit, closeAudit := auditlog.New(store, auditlog.Options{}, log)
	t.Cleanup(closeAudit)
	authz, _ := domain.NewAuthorizer(nil)
	srv, err := rest.New(rest.Config{ShutdownTimeout: time.Second}, app.NewApplication(app.Dependencies{Stores: store.Stores(), Authenticator: cookieAuthn{}, Authorizer: authz,
		AuditLog: audit, Clock: app.SystemClock{}}), log)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		method  string
		headers map[string]string
		want    int
	}{
		{"cross-site fetch", http.MethodPost, map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"same-site other origin", http.MethodPost, map[string]string{"Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{"foreign Origin", http.MethodPost, map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"null Origin", http.MethodPost, map[string]string{"Origin": "null"}, http.StatusForbidden},
		{"our Origin", http.MethodPost, map[string]string{"Origin": "http://edge.test"}, http.StatusCreated},
		{"same-origin fetch", http.MethodPost, map[string]string{"Sec-Fetch-Site": "same-origin"}, http.StatusCreated},
		{"no browser headers", http.MethodPost, nil, http.StatusCreated},
		{"no Origin, foreign Referer", http.MethodPost, map[string]string{"Referer": "https://evil.example/page"}, http.StatusForbidden},
		{"no Origin, our Referer", http.MethodPost, map[string]string{"Referer": "http://edge.test/console"}, http.StatusCreated},
		{"cross-site GET", http.MethodGet, map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusOK},
		{"unknown cookie, cross-site: still 401", http.MethodPost, map[string]string{"Sec-Fetch-Site": "cross-site", "Cookie": "user_session=forged"}, http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, body := "/api/v2/sessions", `{"title":"t"}`
			if tt.method == http.MethodGet {
				path, body = "/api/v2/me", ""
			}
			req, _ := http.NewRequest(tt.method, "http://edge.test"+path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Cookie", "user_session=centre-cookie")
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			resp, err := srv.App().Test(req, -1)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("got %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
}
