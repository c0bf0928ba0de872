package rest_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

var generatedID = regexp.MustCompile(`^[0-9a-f]{24}$`)

// TestAccessLogLine: each request line names the reason of an error answer,
// the client address and the user agent (truncated); a well-formed
// X-Request-ID is kept and echoed, any other is replaced.
func TestAccessLogLine(t *testing.T) {
	long := strings.Repeat("u", 1000)
	tests := []struct {
		name      string
		path      string
		key       string
		ua        string
		requestID string
		status    int
		reason    string
		wantUA    string
		keepID    bool
	}{
		{"allowed", "/api/v2/me", keyUser, "curl/8.5", "", 200, "", "curl/8.5", false},
		{"no credential", "/api/v2/me", "", "probe/1", "", 401, "credential_missing", "probe/1", false},
		{"bad credential", "/api/v2/me", "not-a-key-0000000000", "probe/1", "", 401, "credential_invalid", "probe/1", false},
		{"role lacks permission", "/api/v2/admin/settings", keyUser, "probe/1", "", 403, "role_lacks_permission", "probe/1", false},
		{"unknown path", "/api/v2/nothing-here", keyUser, "probe/1", "", 404, "not_found", "probe/1", false},
		{"long user agent", "/api/v2/me", keyUser, long, "", 200, "", long[:256], false},
		{"caller's request id", "/api/v2/me", keyUser, "", "gw-7f3a.b_c-01", 200, "", "", true},
		{"request id with a space", "/api/v2/me", keyUser, "", "a b", 200, "", "", false},
		{"request id with a quote", "/api/v2/me", keyUser, "", `x"}`, 200, "", "", false},
		{"request id too long", "/api/v2/me", keyUser, "", strings.Repeat("a", 65), 200, "", "", false},
	}
	core, logs := observer.New(zapcore.InfoLevel)
	h := start(t, options{log: zap.New(core)})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", h.url+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.key != "" {
				req.Header.Set("Authorization", bearer(tt.key))
			}
			req.Header.Set("User-Agent", tt.ua)
			if tt.requestID != "" {
				req.Header.Set("X-Request-ID", tt.requestID)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			id := res.Header.Get("X-Request-ID")
			if tt.keepID && id != tt.requestID {
				t.Errorf("X-Request-ID = %q, want the caller's %q", id, tt.requestID)
			}
			if !tt.keepID && !generatedID.MatchString(id) {
				t.Errorf("X-Request-ID = %q, want a new one (24 hex digits)", id)
			}
			var lines []map[string]any
			for _, e := range logs.FilterMessage("request").AllUntimed() {
				if e.ContextMap()["request_id"] == id {
					lines = append(lines, e.ContextMap())
				}
			}
			if len(lines) != 1 {
				t.Fatalf("%d access log lines for %s, want 1", len(lines), id)
			}
			l := lines[0]
			if l["status"] != int64(tt.status) || l["reason"] != tt.reason || l["user_agent"] != tt.wantUA || l["client"] != "127.0.0.1" {
				t.Errorf("line: status %v reason %q user_agent %.40q client %v; want %d %q %.40q 127.0.0.1",
					l["status"], l["reason"], l["user_agent"], l["client"], tt.status, tt.reason, tt.wantUA)
			}
		})
	}
}
