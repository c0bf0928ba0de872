package domain

import (
	"errors"
	"strings"
	"testing"
)

func TestUpstreamAuthValidate(t *testing.T) {
	oauth := func(f func(*UpstreamAuth)) *UpstreamAuth {
		u := &UpstreamAuth{Type: UpstreamOAuth2, Issuer: "https://as.example/", ClientID: "agentauth", ClientSecret: "gh-secret", Scopes: []string{"repo", "read:user"}}
		if f != nil {
			f(u)
		}
		return u
	}
	exchange := func(f func(*UpstreamAuth)) *UpstreamAuth {
		u := &UpstreamAuth{Type: UpstreamTokenExchange, Audience: "billing-api"}
		if f != nil {
			f(u)
		}
		return u
	}
	sv := func(u *UpstreamAuth, f func(*Server)) Server {
		s := Server{Name: "gh", URL: "https://gh.example/mcp", Endpoint: "https://gh.internal/mcp", UpstreamAuth: u}
		if f != nil {
			f(&s)
		}
		return s
	}
	tests := []struct {
		name string
		sv   Server
		want string // "" valid, else a word of the message
	}{
		{"oauth2", sv(oauth(nil), nil), ""},
		{"oauth2, issuer from the endpoint's metadata", sv(oauth(func(u *UpstreamAuth) { u.Issuer = "" }), nil), ""},
		{"oauth2, public client", sv(oauth(func(u *UpstreamAuth) { u.ClientSecret = "" }), nil), ""},
		{"oauth2, resource", sv(oauth(func(u *UpstreamAuth) { u.Resource = "https://gh.example/mcp" }), nil), ""},
		{"token exchange, agentauth's client", sv(exchange(nil), nil), ""},
		{"token exchange, a client of its own", sv(exchange(func(u *UpstreamAuth) { u.ClientID, u.ClientSecret = "gw", "gw-secret" }), nil), ""},
		{"no upstream_auth", sv(nil, nil), ""},
		{"unknown type", sv(oauth(func(u *UpstreamAuth) { u.Type = "saml" }), nil), "want oauth2 or token_exchange"},
		{"oauth2 without client", sv(oauth(func(u *UpstreamAuth) { u.ClientID = "" }), nil), "client_id is required"},
		{"oauth2 with audience", sv(oauth(func(u *UpstreamAuth) { u.Audience = "x" }), nil), "audience is for type token_exchange"},
		{"issuer not a URL", sv(oauth(func(u *UpstreamAuth) { u.Issuer = "as.example" }), nil), "issuer"},
		{"issuer with a query", sv(oauth(func(u *UpstreamAuth) { u.Issuer = "https://as.example/?x=1" }), nil), "issuer"},
		{"secret as a path", sv(oauth(func(u *UpstreamAuth) { u.ClientSecret = "../etc/passwd" }), nil), "client_secret names a file"},
		{"a scope with a space", sv(oauth(func(u *UpstreamAuth) { u.Scopes = []string{"repo user"} }), nil), "scope"},
		{"a scope with a quote", sv(oauth(func(u *UpstreamAuth) { u.Scopes = []string{`a"b`} }), nil), "scope"},
		{"resource with a fragment", sv(oauth(func(u *UpstreamAuth) { u.Resource = "https://gh.example/mcp#x" }), nil), "resource"},
		{"client id with a space", sv(oauth(func(u *UpstreamAuth) { u.ClientID = "a b" }), nil), "client_id"},
		{"token exchange without audience", sv(exchange(func(u *UpstreamAuth) { u.Audience = "" }), nil), "audience is required"},
		{"token exchange, secret without client", sv(exchange(func(u *UpstreamAuth) { u.ClientSecret = "s" }), nil), "client_secret needs the client_id"},
		{"with a static credential too", sv(oauth(nil), func(s *Server) { s.Credential = "gh-token" }), "set one"},
		{"without endpoint", sv(oauth(nil), func(s *Server) { s.Endpoint = "" }), "endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateServerAuth(tt.sv)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("ValidateServerAuth = %v, want valid", err)
			case tt.want != "" && (err == nil || !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("ValidateServerAuth = %v, want ErrInvalidInput saying %q", err, tt.want)
			}
		})
	}
}

// TestUpstreamAuthStored: what is stored reads back the same; none is "".
func TestUpstreamAuthStored(t *testing.T) {
	for _, u := range []*UpstreamAuth{
		nil,
		{Type: UpstreamOAuth2, Issuer: "https://as.example/", ClientID: "c", ClientSecret: "s", Scopes: []string{"a", "b"}, Resource: "https://r.example/"},
		{Type: UpstreamTokenExchange, Audience: "api"},
	} {
		got, err := DecodeUpstreamAuth(EncodeUpstreamAuth(u))
		if err != nil || !got.Equal(u) {
			t.Errorf("round trip of %s = %s, %v", u, got, err)
		}
	}
	if EncodeUpstreamAuth(nil) != "" {
		t.Errorf("none is stored as %q", EncodeUpstreamAuth(nil))
	}
	if _, err := DecodeUpstreamAuth("{"); err == nil {
		t.Error("a broken stored value read without error")
	}
}
