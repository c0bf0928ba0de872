package domain_test

import (
	"errors"
	"testing"

	"github.com/agentauth/agentauth/domain"
)

func TestPermissionOf(t *testing.T) {
	tests := []struct {
		action, resource string
		want             string
		wantErr          bool
	}{
		{"write", "policies", "policies:write", false},
		{" Write ", "POLICIES", "policies:write", false},
		{"settings:read", "", "settings:read", false},
		{"settings:read", "settings", "settings:read", false},
		{"settings:read", "policies", "", true},
		{"read", "", "", true},
	}
	for _, tt := range tests {
		got, err := domain.PermissionOf(tt.action, tt.resource, "Action", "Resource")
		if got != tt.want || (err != nil) != tt.wantErr || err != nil && !errors.Is(err, domain.ErrInvalidInput) {
			t.Errorf("PermissionOf(%q, %q) = %q, %v; want %q, error %v", tt.action, tt.resource, got, err, tt.want, tt.wantErr)
		}
	}
}
