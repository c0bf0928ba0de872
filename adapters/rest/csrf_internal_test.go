package rest

import (
	"errors"
	"testing"

	"github.com/agentauth/agentauth/domain"
)

func TestCheckOrigin(t *testing.T) {
	public := func(redirectURI string) webOrigin {
		o, ok := publicOrigin(redirectURI)
		if !ok {
			t.Fatalf("publicOrigin(%q): not an absolute URL", redirectURI)
		}
		return o
	}
	oidc := public("https://auth.example/auth/callback")
	underBase := public("https://Auth.Example:443/agentauth/auth/callback")
	loopback := public("http://127.0.0.1:8080/auth/callback")
	host := webOrigin{host: "edge.test"}         // key sign-in, hybrid mode: the request's Host
	hostPort := webOrigin{host: "edge.test:443"} // a Host header naming the default port
	tests := []struct {
		name            string
		want            webOrigin
		origin, referer string
		ok              bool
	}{
		{"same origin", oidc, "https://auth.example", "", true},
		{"same origin, upper case", oidc, "HTTPS://AUTH.EXAMPLE", "", true},
		{"same origin, default port named", oidc, "https://auth.example:443", "", true},
		{"no browser headers", oidc, "", "", true},
		{"missing Origin, same-origin Referer", oidc, "", "https://auth.example/console/sessions?page=2", true},
		{"missing Origin, foreign Referer", oidc, "", "https://evil.example/auth.example", false},
		{"missing Origin, Referer on another port", oidc, "", "https://auth.example:8443/", false},
		{"missing Origin, Referer not a URL", oidc, "", "/console", false},
		{"Origin decides over Referer", oidc, "https://evil.example", "https://auth.example/", false},
		{"null", oidc, "null", "", false},
		{"null, same-origin Referer", oidc, "null", "https://auth.example/", false},
		{"another site", oidc, "https://evil.example", "", false},
		{"a suffix of ours", oidc, "https://auth.example.evil.example", "", false},
		{"different port", oidc, "https://auth.example:8443", "", false},
		{"different scheme", oidc, "http://auth.example", "", false},
		{"not a serialised origin: path", oidc, "https://auth.example/x", "", false},
		{"not a serialised origin: user", oidc, "https://evil@auth.example", "", false},
		{"base path: the origin has none", underBase, "https://auth.example", "", true},
		{"base path: Referer under it", underBase, "", "https://auth.example/agentauth/console", true},
		{"loopback with a port", loopback, "http://127.0.0.1:8080", "", true},
		{"loopback, other port", loopback, "http://127.0.0.1:8081", "", false},
		{"loopback, localhost is another origin", loopback, "http://localhost:8080", "", false},
		{"request host, any scheme", host, "https://edge.test", "", true},
		{"request host, plain http", host, "http://EDGE.test", "", true},
		{"request host, other port", host, "https://edge.test:8443", "", false},
		{"request host, other host", host, "https://evil.example", "", false},
		{"request host, null", host, "null", "", false},
		{"request host, Referer", host, "", "https://edge.test/console", true},
		{"request host, foreign Referer", host, "", "https://evil.example/", false},
		{"request Host names the default port", hostPort, "https://edge.test", "", true},
		{"request Host's default port is not http's", hostPort, "http://edge.test", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkOrigin(tt.want, tt.origin, tt.referer)
			if got := err == nil; got != tt.ok {
				t.Errorf("checkOrigin(%s, Origin %q, Referer %q) = %v; want allowed=%v", tt.want, tt.origin, tt.referer, err, tt.ok)
			}
			if err != nil && !errors.Is(err, domain.ErrForbidden) {
				t.Errorf("got %v; want an ErrForbidden", err)
			}
		})
	}
}

// FuzzCheckOrigin: no header makes the rule panic, and a request is let
// through only with no browser header or with one that names our origin.
func FuzzCheckOrigin(f *testing.F) {
	for _, seed := range [][2]string{{"https://auth.example", ""}, {"null", ""}, {"", "https://auth.example/x"},
		{"https://auth.example:443", ""}, {"HTTPS://AUTH.EXAMPLE", ""}, {"https://evil@auth.example", ""}, {"https:", "//auth.example"}} {
		f.Add(seed[0], seed[1])
	}
	want, _ := publicOrigin("https://auth.example/auth/callback")
	f.Fuzz(func(t *testing.T, origin, referer string) {
		if checkOrigin(want, origin, referer) != nil {
			return
		}
		sent := origin
		if sent == "" {
			sent = referer
		}
		if sent == "" {
			return
		}
		if got, ok := publicOrigin(sent); !ok || got != want {
			t.Fatalf("Origin %q Referer %q let through: names %v, want %v", origin, referer, got, want)
		}
	})
}
