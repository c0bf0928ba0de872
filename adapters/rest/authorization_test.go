package rest_test

import (
	"io"
	"net/http"
	"testing"
)

// TestAuthorizationHeaderSyntax: RFC 6750 §2.1 and §3.1. One Authorization
// header; only ASCII space or tab separate the scheme from the credential;
// the credential is a b64token. Two headers, or a credential with other
// characters (U+00A0 included, which strings.TrimSpace used to remove), is
// a malformed request: 400 invalid_request, never accepted.
func TestAuthorizationHeaderSyntax(t *testing.T) {
	h := start(t, options{})
	tests := []struct {
		name     string
		values   []string
		want     int
		wantCode string
	}{
		{"one header", []string{"Bearer " + keyUser}, 200, ""},
		{"scheme in lower case", []string{"bearer " + keyUser}, 200, ""},
		{"a tab", []string{"Bearer\t" + keyUser}, 200, ""},
		{"several spaces", []string{"Bearer   " + keyUser}, 200, ""},
		{"two headers", []string{"Bearer " + keyUser, "Bearer " + keyAdmin}, 400, "invalid_request"},
		{"two equal headers", []string{"Bearer " + keyUser, "Bearer " + keyUser}, 400, "invalid_request"},
		{"an empty second header", []string{"Bearer " + keyUser, ""}, 400, "invalid_request"},
		{"no-break space after the key", []string{"Bearer " + keyUser + "\u00a0"}, 400, "invalid_request"},
		{"ideographic space after the key", []string{"Bearer " + keyUser + "\u3000"}, 400, "invalid_request"},
		{"no-break space as the separator", []string{"Bearer\u00a0" + keyUser}, 401, "unauthenticated"},
		{"a space inside", []string{"Bearer " + keyUser + " extra"}, 400, "invalid_request"},
		{"a quote", []string{`Bearer "` + keyUser + `"`}, 400, "invalid_request"},
		{"padding first", []string{"Bearer =" + keyUser}, 400, "invalid_request"},
		{"another scheme", []string{"Basic dXNlcjpwdw=="}, 401, "unauthenticated"},
		{"scheme alone", []string{"Bearer"}, 401, "unauthenticated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", h.url+"/api/v2/me", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header["Authorization"] = tt.values
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			r := response{status: res.StatusCode, header: res.Header, body: b}
			if tt.want == 200 {
				if r.status != 200 {
					t.Fatalf("status = %d %s, want 200", r.status, r.body)
				}
				return
			}
			checkError(t, r, tt.want, tt.wantCode)
			if got := res.Header.Get("WWW-Authenticate"); tt.want == 400 && got != `Bearer realm="agentauth", error="invalid_request"` {
				t.Errorf("WWW-Authenticate = %q, want the invalid_request challenge", got)
			}
		})
	}
}

// TestAuthorizationWithoutBearerSaysSo: a key sent as the whole header
// (Authorization: <key>), under another scheme or with nothing after
// Bearer is a 401 with the usual challenge whose message says what is
// wrong with the header; the message never repeats what was sent.
func TestAuthorizationWithoutBearerSaysSo(t *testing.T) {
	h := start(t, options{})
	tests := []struct {
		name, header, wantMessage string
	}{
		{"the key alone", keyUser, "the Authorization header lacks the scheme Bearer: send Authorization: Bearer <credential>"},
		{"another scheme", "Basic dXNlcjpwdw==", "the Authorization header's scheme is not Bearer: send Authorization: Bearer <credential>"},
		{"the key after a token scheme", "Token " + keyUser, "the Authorization header's scheme is not Bearer: send Authorization: Bearer <credential>"},
		{"Bearer alone", "Bearer", "the Authorization header has no credential after Bearer"},
		{"Bearer and spaces", "Bearer   ", "the Authorization header has no credential after Bearer"},
		{"a wrong key", "Bearer wrong-key-wrong-key", "credential not accepted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.do(t, "GET", "/api/v2/me", tt.header, "")
			e := checkError(t, r, 401, "unauthenticated")
			if e.Error.Message != tt.wantMessage {
				t.Errorf("message: got %q, want %q", e.Error.Message, tt.wantMessage)
			}
			if got, want := r.header.Get("WWW-Authenticate"), `Bearer realm="agentauth", error="invalid_token"`; got != want {
				t.Errorf("WWW-Authenticate: got %q, want %q", got, want)
			}
		})
	}
}
