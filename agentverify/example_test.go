package agentverify_test

import (
	"encoding/json"
	"log"
	"net/http"
	"strings"
	"time"

	"github.com/agentauth/agentauth/agentverify"
)

// A tool server that takes agentauth's agent tokens (the README's sample,
// compiled here so that it stays true).
func Example_toolServer() {
	const issuer = "https://agentauth.example.com" // the metadata's issuer
	const resource = "https://fs.example.com/mcp"  // this server's registered URL: the tokens' aud
	// The metadata's jwks_uri:
	keys := agentverify.NewRemoteKeys(issuer+"/.well-known/jwks.json", nil, 30*time.Second)
	v, err := agentverify.New(issuer, resource, keys)
	if err != nil {
		log.Fatal(err)
	}
	http.HandleFunc("POST /mcp/tools/{tool}", func(w http.ResponseWriter, r *http.Request) {
		tok, err := v.Verify(r.Context(), strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, err.Error(), http.StatusUnauthorized) // *agentverify.Error: its Code says why
			return
		}
		if !tok.Permits(r.PathValue("tool")) {
			http.Error(w, "insufficient_scope", http.StatusForbidden)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"user": tok.User, "agent": tok.Agent(), "session": tok.Session})
	})
	log.Fatal(http.ListenAndServe("127.0.0.1:8081", nil))
}
