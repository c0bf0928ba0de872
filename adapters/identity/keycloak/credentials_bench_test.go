package keycloak

import (
	"context"
	"testing"

	"github.com/agentauth/agentauth/adapters/identity/apikey"
	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/ports"
)

// BenchmarkOIDCBearer is OIDC mode's Bearer authentication as wire builds
// it (app.Credentials over this adapter and SERVICE_API_KEY's ring): a
// static API key and an access token, each accepted.
func BenchmarkOIDCBearer(b *testing.B) {
	op := newFakeOP(b)
	p := op.provider(b, nil)
	const key = "bench-static-api-key-0123456789abcdef"
	ring, err := apikey.New(key)
	if err != nil {
		b.Fatal(err)
	}
	creds := benchCredentials(NewAuthenticator(p), ring)
	for _, tt := range []struct {
		name string
		cred ports.Credential
	}{
		{"api-key", bearer(key)},
		{"access-token", bearer(op.sign(op.accessClaims(), nil))},
	} {
		b.Run(tt.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := creds.Authenticate(ctx, tt.cred); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func benchCredentials(tokens, keys ports.Authenticator) *app.Credentials {
	return &app.Credentials{Tokens: tokens, Keys: keys}
}
