package apikey_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentauth/agentauth/adapters/identity/apikey"
	"github.com/agentauth/agentauth/adapters/identity/debug"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

const key = "0123456789abcdef-key"

func TestAPIKeyMode(t *testing.T) {
	ring, err := apikey.New(key)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cred ports.Credential
		ok   bool
	}{
		{"the key", ports.Credential{Kind: ports.CredentialBearer, Value: key}, true},
		{"another key", ports.Credential{Kind: ports.CredentialBearer, Value: key + "x"}, false},
		{"a prefix of the key", ports.Credential{Kind: ports.CredentialBearer, Value: key[:10]}, false},
		{"empty", ports.Credential{Kind: ports.CredentialBearer}, false},
		{"the key as a cookie", ports.Credential{Kind: ports.CredentialCookie, Value: key}, false},
		{"nothing", ports.Credential{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ring.Authenticate(context.Background(), tt.cred)
			if tt.ok {
				if err != nil || !p.Has(domain.RoleAdmin) || p.Method != domain.MethodAPIKey || p.Subject != "apikey:"+apikey.Fingerprint(key) {
					t.Errorf("got %+v, %v; want ADMIN by api_key", p, err)
				}
				return
			}
			if !errors.Is(err, domain.ErrUnauthenticated) || p.Subject != "" || len(p.Roles) != 0 {
				t.Errorf("got %+v, %v; want no principal and ErrUnauthenticated", p, err)
			}
		})
	}
	if _, err := apikey.New("short"); !errors.Is(err, domain.ErrInvalidInput) {
		t.Errorf("New(short) = %v, want ErrInvalidInput", err)
	}
	if apikey.Fingerprint(key) == apikey.Fingerprint(key+"x") || len(apikey.Fingerprint(key)) != 12 {
		t.Error("fingerprints must tell keys apart and have 12 hex digits")
	}
}

func TestDebugKeys(t *testing.T) {
	ring := debug.New()
	for key, role := range debug.Keys() {
		p, err := ring.Authenticate(context.Background(), ports.Credential{Kind: ports.CredentialBearer, Value: key})
		if err != nil || len(p.Roles) != 1 || p.Roles[0] != role || p.Method != domain.MethodDebug || p.Subject != key {
			t.Errorf("%s: got %+v, %v; want role %s", key, p, err, role)
		}
	}
	if len(debug.Keys()) != 4 {
		t.Errorf("%d debug keys, want 4", len(debug.Keys()))
	}
	if _, err := ring.Authenticate(context.Background(), ports.Credential{Kind: ports.CredentialBearer, Value: "debug-root"}); !errors.Is(err, domain.ErrUnauthenticated) {
		t.Errorf("debug-root: %v, want ErrUnauthenticated", err)
	}
}

func BenchmarkAuthenticate(b *testing.B) {
	ring := debug.New()
	cred := ports.Credential{Kind: ports.CredentialBearer, Value: "debug-auditor"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ring.Authenticate(context.Background(), cred); err != nil {
			b.Fatal(err)
		}
	}
}
