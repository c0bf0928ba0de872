package rest

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// TestDiscoveryOnThePublicListener: the RFC 8414 metadata and the key set
// are served without a credential by the public listener, the metadata
// at the well-known path with the issuer's path inserted (RFC 8414 §3.1)
// and naming exactly the issuer it was fetched under (§3.3), its endpoints
// under the server's base path; the API port still answers 401 to them.
func TestDiscoveryOnThePublicListener(t *testing.T) {
	tests := []struct {
		name, issuer, basePath, metadataAt, wrongAt string
	}{
		{"issuer at the root", "https://agentauth.test", "", "/.well-known/oauth-authorization-server", "/.well-known/oauth-authorization-server/x"},
		{"issuer under a base path", "https://gw.test/agentauth", "/agentauth", "/.well-known/oauth-authorization-server/agentauth",
			"/agentauth/.well-known/oauth-authorization-server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := axStart(t, filepath.Join(t.TempDir(), "agentauth.db"), axOptions{issuer: tt.issuer, basePath: tt.basePath})
			pub := h.srv.PublicApp()
			get := func(path string) (int, map[string]any) {
				res, err := pub.Test(httptest.NewRequest("GET", path, nil), -1)
				if err != nil {
					t.Fatal(err)
				}
				defer res.Body.Close()
				body := map[string]any{}
				_ = json.NewDecoder(res.Body).Decode(&body)
				return res.StatusCode, body
			}
			status, md := get(tt.metadataAt)
			if status != 200 || md["issuer"] != tt.issuer || md["jwks_uri"] != tt.issuer+jwksPath || md["token_endpoint"] != tt.issuer+tokenEndpoint ||
				md["introspection_endpoint"] != tt.issuer+introspectionEndpoint {
				t.Errorf("GET %s: %d %v, want the metadata of issuer %s", tt.metadataAt, status, md, tt.issuer)
			}
			// Every URL it names is served here, under the issuer's path.
			iss, _ := url.Parse(tt.issuer)
			if status, set := get(iss.Path + jwksPath); status != 200 || len(set["keys"].([]any)) != 1 {
				t.Errorf("GET %s: %d %v, want the key set", iss.Path+jwksPath, status, set)
			}
			for _, ep := range []string{tokenEndpoint, introspectionEndpoint} {
				res, err := pub.Test(httptest.NewRequest("POST", iss.Path+ep, strings.NewReader("")), -1)
				if err != nil {
					t.Fatal(err)
				}
				var e oauthErrorJSON
				_ = json.NewDecoder(res.Body).Decode(&e)
				res.Body.Close()
				if res.StatusCode == 404 || e.Error == nil {
					t.Errorf("POST %s on the public listener: %d %v, want the OAuth endpoint", iss.Path+ep, res.StatusCode, e)
				}
			}
			if status, _ := get(tt.wrongAt); status != 404 && status != 401 {
				t.Errorf("GET %s: %d, want no metadata there", tt.wrongAt, status)
			}
			// The API port keeps its rule: a credential, else 401.
			for _, path := range []string{metadataPath, tt.metadataAt, jwksPath} {
				if r := h.do(t, "", "GET", tt.basePath+path, ""); r.status != 401 {
					t.Errorf("API port GET %s without a credential: %d, want 401", tt.basePath+path, r.status)
				}
			}
		})
	}
}

// TestPublicListenerServes: the listener answers over HTTP at the issuer,
// and its metadata names it.
func TestPublicListenerServes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + ln.Addr().String()
	axStart(t, filepath.Join(t.TempDir(), "agentauth.db"), axOptions{issuer: issuer, public: ln})
	res, err := http.Get(issuer + metadataPath)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var md map[string]any
	if err := json.Unmarshal(b, &md); err != nil || res.StatusCode != 200 || md["issuer"] != issuer {
		t.Errorf("GET %s: %d %s, want the metadata naming %s", issuer+metadataPath, res.StatusCode, b, issuer)
	}
}
