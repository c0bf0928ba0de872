package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidateRoleKeys(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", "a-long-enough-key-123\n", 0o600)
	loose := write("loose", "a-long-enough-key-123\n", 0o644)
	short := write("short", "short\n", 0o600)
	custom := []CustomRole{{Name: "SECOPS", Extends: "AUDITOR", Permissions: []string{"policies:write"}}}
	tests := []struct {
		name   string
		keys   []RoleKey
		apiKey string
		oidc   bool
		want   []string // substrings of the error; none: valid
	}{
		{"custom role", []RoleKey{{Subject: "bot", Role: "SECOPS", KeyFile: good}}, "", false, nil},
		{"built-in role, lower case", []RoleKey{{Subject: "bot", Role: "user", KeyFile: good}}, "", false, nil},
		{"unknown role", []RoleKey{{Subject: "bot", Role: "ROOT", KeyFile: good}}, "", false, []string{`auth.keys[0].role: "ROOT"`}},
		{"no subject, no file", []RoleKey{{Role: "USER"}}, "", false, []string{"auth.keys[0].subject", "auth.keys[0].keyFile: must name"}},
		{"subject twice", []RoleKey{{Subject: "a", Role: "USER", KeyFile: good}, {Subject: "a", Role: "USER", KeyFile: good}}, "", false, []string{`auth.keys[1].subject: "a" is used twice`}},
		{"loose file", []RoleKey{{Subject: "a", Role: "USER", KeyFile: loose}}, "", false, []string{"chmod 600"}},
		{"short key", []RoleKey{{Subject: "a", Role: "USER", KeyFile: short}}, "", false, []string{"fewer than 16"}},
		{"missing file", []RoleKey{{Subject: "a", Role: "USER", KeyFile: filepath.Join(dir, "nope")}}, "", false, []string{"no such file"}},
		{"oidc mode", []RoleKey{{Subject: "a", Role: "USER", KeyFile: good}}, "", true, []string{"not in oidc mode"}},
	}
	for _, tt := range tests {
		c := Defaults()
		c.Auth.Roles, c.Auth.Keys, c.Auth.OIDC.Enabled = custom, tt.keys, tt.oidc
		errs := c.validateAccess()
		msg := ""
		for _, e := range errs {
			msg += e.Error() + "\n"
		}
		if len(tt.want) == 0 && len(errs) > 0 {
			t.Errorf("%s: got %q, want valid", tt.name, msg)
		}
		if len(tt.want) > 0 && len(errs) == 0 {
			t.Errorf("%s: valid, want errors %q", tt.name, tt.want)
		}
		for _, w := range tt.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: got %q, want it to mention %q", tt.name, msg, w)
			}
		}
		if len(tt.want) == 0 {
			keys, err := c.RoleKeys()
			if err != nil || len(keys) != 1 || keys[0].Principal.Subject != "key:bot" || keys[0].Key != "a-long-enough-key-123" {
				t.Errorf("%s: RoleKeys = %+v, %v", tt.name, keys, err)
			}
		}
	}
	c := Defaults()
	c.Auth.Keys = []RoleKey{{Subject: "a", Role: "USER", KeyFile: short}}
	if _, err := c.RoleKeys(); err == nil {
		t.Error("RoleKeys with a short key: want an error")
	}
}
