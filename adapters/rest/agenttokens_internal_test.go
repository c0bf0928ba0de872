package rest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/agentauth/agentauth/ports"
)

type fixedKeys struct{ set jose.JSONWebKeySet }

func (fixedKeys) Issuer() string             { return "http://agentauth.test" }
func (k fixedKeys) JWKS() jose.JSONWebKeySet { return k.set }

// TestIsAgentTokenRoutes: a Bearer credential goes to the agent-token
// verifier when its protected header names the agent algorithm and one of
// the service's keys, and to the identity adapters otherwise (where a
// forgery is refused as any unknown token is).
func TestIsAgentTokenRoutes(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	ours := jose.JSONWebKey{Key: pub, KeyID: "agent-key-1", Algorithm: string(jose.EdDSA), Use: "sig"}
	s := &Server{cfg: Config{AgentTokens: &AgentTokens{Keys: fixedKeys{jose.JSONWebKeySet{Keys: []jose.JSONWebKey{ours}}}}}}
	sign := func(alg jose.SignatureAlgorithm, key any, kid string) string {
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", kid).WithType("JWT"))
		if err != nil {
			t.Fatal(err)
		}
		jws, err := signer.Sign([]byte(`{"sub":"agent"}`))
		if err != nil {
			t.Fatal(err)
		}
		out, err := jws.CompactSerialize()
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	header := func(json string) string {
		return base64.RawURLEncoding.EncodeToString([]byte(json)) + ".eyJzdWIiOiJ4In0.c2ln"
	}
	tests := []struct {
		name  string
		token string
		want  bool
	}{
		{"ours", sign(jose.EdDSA, priv, "agent-key-1"), true},
		{"our algorithm, another key", sign(jose.EdDSA, priv, "keycloak-key"), false},
		{"our kid, another algorithm", sign(jose.HS256, []byte("0123456789abcdef0123456789abcdef"), "agent-key-1"), false},
		{"our kid and algorithm, any signature", header(`{"alg":"EdDSA","kid":"agent-key-1"}`), true},
		{"no kid", header(`{"alg":"EdDSA"}`), false},
		{"names in another case (go-jose reads none)", header(`{"ALG":"EdDSA","KID":"agent-key-1"}`), false},
		{"a name twice", header(`{"alg":"HS256","alg":"EdDSA","kid":"agent-key-1"}`), false},
		{"our kid escaped: not a header we signed", header(`{"alg":"EdDSA","kid":"agent\u002dkey-1"}`), false},
		{"our kid in another member", header(`{"alg":"EdDSA","kid":"other","x":"agent-key-1"}`), false},
		{"header not JSON", header(`alg=EdDSA`), false},
		{"header not base64url", "!!!.eyJzdWIiOiJ4In0.c2ln", false},
		{"an API key", "aak_0123456789abcdef", false},
		{"two segments", "eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJ4In0", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Twice: the second reading may be from memory.
			for range 2 {
				if got := s.isAgentToken(ports.Credential{Kind: ports.CredentialBearer, Value: tt.token}); got != tt.want {
					t.Errorf("isAgentToken(%.40s…) = %v, want %v", tt.token, got, tt.want)
				}
			}
		})
	}
	// A header read before as ours is not ours once its key has left the
	// set (rotated out).
	token := sign(jose.EdDSA, priv, "agent-key-1")
	s.cfg.AgentTokens.Keys = fixedKeys{jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pub, KeyID: "agent-key-2", Algorithm: string(jose.EdDSA), Use: "sig"}}}}
	if s.isAgentToken(ports.Credential{Kind: ports.CredentialBearer, Value: token}) {
		t.Error("a token of a key no longer in the set is still taken for an agent token")
	}
}

// TestAgentHeadersBounded: the memory of headers read as ours holds at
// most maxAgentHeaders, whatever headers callers make up.
func TestAgentHeadersBounded(t *testing.T) {
	var h agentHeaders
	for i := range 3 * maxAgentHeaders {
		h.keep(fmt.Sprintf("header-%d", i), "kid")
	}
	n := 0
	h.kids.Range(func(_, _ any) bool { n++; return true })
	if n != maxAgentHeaders {
		t.Errorf("%d headers kept, want %d", n, maxAgentHeaders)
	}
	if kid, ok := h.kid("header-0"); !ok || kid != "kid" {
		t.Errorf("kid(header-0) = %q, %v; want kid, true", kid, ok)
	}
}

// BenchmarkIsAgentToken: the routing check every Bearer request makes.
func BenchmarkIsAgentToken(b *testing.B) {
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	ours := jose.JSONWebKey{Key: pub, KeyID: "agent-key-1", Algorithm: string(jose.EdDSA), Use: "sig"}
	s := &Server{cfg: Config{AgentTokens: &AgentTokens{Keys: fixedKeys{jose.JSONWebKeySet{Keys: []jose.JSONWebKey{ours}}}}}}
	cred := ports.Credential{Kind: ports.CredentialBearer,
		Value: base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"EdDSA","kid":"agent-key-1","typ":"at+jwt"}`)) + ".eyJzdWIiOiJ4In0.c2ln"}
	b.ReportAllocs()
	for b.Loop() {
		if !s.isAgentToken(cred) {
			b.Fatal("not ours")
		}
	}
}
