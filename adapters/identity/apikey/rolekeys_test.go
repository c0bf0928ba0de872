package apikey_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentauth/agentauth/adapters/identity/apikey"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

func TestWithRoleKeys(t *testing.T) {
	base, err := apikey.New("admin-key-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	bot := apikey.Entry{Key: "bot-key-0123456789ab", Principal: domain.Principal{Subject: "key:bot", Roles: []domain.Role{"SECOPS"}}}
	ring := apikey.WithRoleKeys(base, apikey.RoleKeys{bot})
	ctx := context.Background()
	tests := []struct {
		auth    ports.Authenticator
		key     string
		subject string // empty: refused
	}{
		{ring, "bot-key-0123456789ab", "key:bot"},
		{ring, "admin-key-0123456789", "apikey:" + apikey.Fingerprint("admin-key-0123456789")},
		{ring, "bot-key-0123456789aX", ""},
		{base, "bot-key-0123456789ab", ""}, // the base ring is not changed
	}
	for i, tt := range tests {
		p, err := tt.auth.Authenticate(ctx, ports.Credential{Kind: ports.CredentialBearer, Value: tt.key})
		switch {
		case tt.subject == "" && !errors.Is(err, domain.ErrUnauthenticated):
			t.Errorf("case %d: got %+v, %v; want ErrUnauthenticated", i, p, err)
		case tt.subject != "" && (err != nil || p.Subject != tt.subject):
			t.Errorf("case %d: got %+v, %v; want subject %s", i, p, err, tt.subject)
		}
	}
}
