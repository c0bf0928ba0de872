package domain

import (
	"slices"
	"testing"
)

func TestJoinAndSplitRoles(t *testing.T) {
	tests := []struct {
		roles []Role
		text  string
	}{
		{nil, ""},
		{[]Role{RoleAdmin}, "ADMIN"},
		{[]Role{RoleUser, RoleLead, "SRE"}, "USER,LEAD,SRE"},
	}
	for _, tt := range tests {
		if got := JoinRoles(tt.roles); got != tt.text {
			t.Errorf("JoinRoles(%v) = %q, want %q", tt.roles, got, tt.text)
		}
		if got := SplitRoles(tt.text); !slices.Equal(got, tt.roles) {
			t.Errorf("SplitRoles(%q) = %v, want %v", tt.text, got, tt.roles)
		}
	}
}
