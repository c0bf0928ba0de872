package app_test

import (
	"fmt"
	"testing"

	"github.com/golang/mock/gomock"

	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
	"github.com/agentauth/agentauth/ports/mocks"
)

// TestCredentialsRouteBySyntax: a Bearer credential is offered first to
// the authenticator its syntax names (a JWT to the access-token verifier,
// anything else to the keys), and to the other only when the first
// refuses, so the order changes what a request costs, never its outcome.
func TestCredentialsRouteBySyntax(t *testing.T) {
	const jwt, key = "tokens", "keys"
	tests := []struct {
		name, value string
		first       string
	}{
		{"access token (JWT)", "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1In0.c2ln", jwt},
		{"static API key", "static-api-key-0123456789abcdef", key},
		{"managed key", "aak_0123456789ab_" + "S3cretS3cretS3cretS3cretS3cret0", key},
		{"opaque access token", "2YotnFZFEjr1zCsicMWpAA", key},
		{"one dot", "abc.def", key},
		{"JWE-like, five parts", "a.b.c.d.e", key},
	}
	unauth := fmt.Errorf("no: %w", domain.ErrUnauthenticated)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cred := ports.Credential{Kind: ports.CredentialBearer, Value: tt.value}
			for _, firstAccepts := range []bool{true, false} {
				c := gomock.NewController(t)
				tokens, keys := mocks.NewMockAuthenticator(c), mocks.NewMockAuthenticator(c)
				first, second := keys, tokens
				if tt.first == jwt {
					first, second = tokens, keys
				}
				want := domain.Principal{Subject: tt.first}
				if firstAccepts {
					first.EXPECT().Authenticate(gomock.Any(), cred).Return(want, nil)
				} else {
					want = domain.Principal{Subject: "second"}
					gomock.InOrder(
						first.EXPECT().Authenticate(gomock.Any(), cred).Return(domain.Principal{}, unauth),
						second.EXPECT().Authenticate(gomock.Any(), cred).Return(want, nil),
					)
				}
				creds := &app.Credentials{Tokens: tokens, Keys: keys}
				got, err := creds.Authenticate(t.Context(), cred)
				if err != nil || got.Subject != want.Subject {
					t.Errorf("first accepts %v: got %+v, %v, want %+v", firstAccepts, got, err, want)
				}
				c.Finish()
			}
		})
	}
}

// TestCredentialsOneAuthenticator: the key sign-in modes have keys and no
// access-token verifier; a JWT-shaped credential goes to the keys then.
func TestCredentialsOneAuthenticator(t *testing.T) {
	c := gomock.NewController(t)
	keys := mocks.NewMockAuthenticator(c)
	cred := ports.Credential{Kind: ports.CredentialBearer, Value: "a.b.c"}
	keys.EXPECT().Authenticate(gomock.Any(), cred).Return(domain.Principal{Subject: "k"}, nil)
	if p, err := (&app.Credentials{Keys: keys}).Authenticate(t.Context(), cred); err != nil || p.Subject != "k" {
		t.Errorf("got %+v, %v, want the keys' principal", p, err)
	}
}
