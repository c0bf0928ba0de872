package wire

import (
	"testing"

	"github.com/agentauth/agentauth/config"
)

// TestLogoutSubjectsAreOwners: a back-channel logout token names its user
// by sub, so it may suspend managed keys only where subjects are subs.
func TestLogoutSubjectsAreOwners(t *testing.T) {
	for claim, want := range map[string]bool{"": true, "sub": true, "preferred_username": false, "email": false} {
		cfg := config.Defaults()
		cfg.Auth.OIDC.SubjectClaim = claim
		if got := logoutSubjectsAreOwners(cfg); got != want {
			t.Errorf("subjectClaim %q: got %v, want %v", claim, got, want)
		}
	}
}
