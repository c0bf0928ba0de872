package rest_test

import (
	"strings"
	"testing"
)

// TestDuplicateJSONKeysAreRefused: a body naming one member twice is
// ambiguous (encoding/json keeps the last, another parser in front may keep
// the first, and member names match without regard to case), so it is
// refused with 400 naming the key, at any depth.
func TestDuplicateJSONKeysAreRefused(t *testing.T) {
	h := start(t, options{})
	tests := []struct {
		name, path, body, key string
	}{
		{"same key twice", "/api/v2/sessions", `{"title":"a","title":"b"}`, `"title"`},
		{"differing only in case", "/api/v2/sessions", `{"title":"a","Title":"b"}`, `"Title"`},
		{"escaped spelling of the same key", "/api/v2/sessions", `{"title":"a","\u0074itle":"b"}`, `"title"`},
		{"in settings", "/api/v2/admin/settings", `{"security_gateway":false,"default_session_mode":"ask","security_gateway":true}`, `"security_gateway"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := "POST"
			if strings.Contains(tt.path, "settings") {
				method = "PUT"
			}
			r := h.do(t, method, tt.path, bearer(keyAdmin), tt.body)
			e := checkError(t, r, 400, "invalid_request")
			if !strings.Contains(e.Error.Message, "duplicate") || !strings.Contains(e.Error.Message, tt.key) {
				t.Errorf("message %q does not name the duplicate key %s", e.Error.Message, tt.key)
			}
		})
	}
	// Distinct keys in different objects are fine.
	if r := h.do(t, "POST", "/api/v2/sessions", bearer(keyAdmin), `{"title":"a","mode":"ask"}`); r.status != 201 {
		t.Errorf("a valid body: got %d %s, want 201", r.status, r.body)
	}
}
