package rest_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/golang/mock/gomock"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
	"github.com/agentauth/agentauth/ports/mocks"
)

// TestEveryAnswerForbidsCachingAndSniffing: authenticated answers and
// errors (401, 403, 404, 429, 503, 400) carry Cache-Control: no-store and
// X-Content-Type-Options: nosniff (OWASP ASVS V3/V14), so no shared cache
// keeps one caller's data and no browser reinterprets a body.
func TestEveryAnswerForbidsCachingAndSniffing(t *testing.T) {
	h := start(t, options{routes: func(app *fiber.App) {
		app.Get("/api/v2/throttled", func(*fiber.Ctx) error { return domain.ErrTooManyRequests })
	}})
	ctrl := gomock.NewController(t)
	failing := mocks.NewMockAuditLog(ctrl)
	failing.EXPECT().Record(gomock.Any(), gomock.Any()).Return(errors.New("disk full")).AnyTimes()
	down := start(t, options{auditLog: func(ports.AuditStore) ports.AuditLog { return failing }})
	tests := []struct {
		name         string
		h            harness
		method, path string
		auth, body   string
		want         int
	}{
		{"me", h, "GET", "/api/v2/me", bearer(keyUser), "", 200},
		{"sessions", h, "GET", "/api/v2/sessions", bearer(keyUser), "", 200},
		{"session created", h, "POST", "/api/v2/sessions", bearer(keyUser), `{"title":"t"}`, 201},
		{"audit", h, "GET", "/api/v2/audit", bearer(keyAuditor), "", 200},
		{"settings", h, "GET", "/api/v2/admin/settings", bearer(keyAdmin), "", 200},
		{"401 without a credential", h, "GET", "/api/v2/me", "", "", 401},
		{"401 with a wrong one", h, "GET", "/api/v2/me", bearer("not-a-key-at-all-x"), "", 401},
		{"403", h, "GET", "/api/v2/audit", bearer(keyUser), "", 403},
		{"404", h, "GET", "/api/v2/nothing-here", bearer(keyUser), "", 404},
		{"400", h, "POST", "/api/v2/sessions", bearer(keyUser), `{"title":`, 400},
		{"429", h, "GET", "/api/v2/throttled", bearer(keyUser), "", 429},
		{"503", down, "GET", "/api/v2/me", bearer(keyUser), "", 503},
	}
	// Errors fasthttp finds before any stage runs (431: headers too large)
	// come through the error handler, and carry the headers too.
	t.Run("431 before the stages", func(t *testing.T) {
		req, _ := http.NewRequest("GET", h.url+"/api/v2/me", nil)
		req.Header.Set("X-Big", strings.Repeat("a", 40<<10))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 431 || res.Header.Get("Cache-Control") != "no-store" || res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("got %d %v, want 431 with no-store and nosniff", res.StatusCode, res.Header)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.h.do(t, tt.method, tt.path, tt.auth, tt.body)
			if r.status != tt.want {
				t.Fatalf("status = %d %s, want %d", r.status, r.body, tt.want)
			}
			if got := r.header.Values("Cache-Control"); len(got) != 1 || got[0] != "no-store" {
				t.Errorf("Cache-Control = %q, want [no-store]", got)
			}
			if got := r.header.Values("X-Content-Type-Options"); len(got) != 1 || got[0] != "nosniff" {
				t.Errorf("X-Content-Type-Options = %q, want [nosniff]", got)
			}
		})
	}
}
