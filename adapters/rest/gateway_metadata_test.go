package rest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"
)

// TestGatewayProtectedResourceMetadata: a gateway request without a
// credential is 401 naming its RFC 9728 metadata, which the management
// listener serves without credentials.
func TestGatewayProtectedResourceMetadata(t *testing.T) {
	u := newGWUpstream(t)
	h := gwNew(t, 5*time.Second)
	gwWorld(t, h, u)
	tests := []struct {
		path, challenge string
	}{
		{"/mcp/fs", `Bearer realm="agentauth", resource_metadata="http://metadata.test/.well-known/oauth-protected-resource/mcp/fs"`},
		{"/api/v2/me", `Bearer realm="agentauth"`},
	}
	for _, tt := range tests {
		status, hdr, _ := gwPost(t, h, tt.path[len("/mcp/"):], "", "", gwInitialize)
		if tt.path == "/api/v2/me" {
			res, err := http.Get(h.url + tt.path)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			status, hdr = res.StatusCode, res.Header
		}
		if got := hdr.Get("WWW-Authenticate"); status != 401 || got != tt.challenge {
			t.Errorf("%s without credential: %d %q, want 401 %q", tt.path, status, got, tt.challenge)
		}
	}

	// The same documents on the management and the public listener.
	mgmt := httptest.NewServer(h.srv.ManagementHandler())
	defer mgmt.Close()
	for _, base := range []string{mgmt.URL, "public"} {
		testMetadataDocs(t, h, base)
	}
}

func testMetadataDocs(t *testing.T, h *axHarness, base string) {
	docs := []struct {
		path   string
		status int
	}{
		{"/.well-known/oauth-protected-resource/mcp/fs", 200},
		{"/.well-known/oauth-protected-resource/mcp/nope", 404},
		{"/.well-known/oauth-protected-resource/other/fs", 404},
	}
	for _, d := range docs {
		var res *http.Response
		var err error
		if base == "public" {
			res, err = h.srv.PublicApp().Test(httptest.NewRequest("GET", d.path, nil))
		} else {
			res, err = http.Get(base + d.path)
		}
		if err != nil {
			t.Fatal(err)
		}
		var doc protectedResource
		_ = json.NewDecoder(res.Body).Decode(&doc)
		res.Body.Close()
		if res.StatusCode != d.status {
			t.Errorf("%s: GET %s = %d, want %d", base, d.path, res.StatusCode, d.status)
			continue
		}
		if d.status == 200 && (doc.Resource != gwResourceBase+"/mcp/fs" ||
			!slices.Equal(doc.AuthorizationServers, []string{"https://idp.test/realms/agentauth", axIssuer}) || !slices.Equal(doc.BearerMethodsSupported, []string{"header"})) {
			t.Errorf("%s: GET %s = %+v", base, d.path, doc)
		}
	}
}
