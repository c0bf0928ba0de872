package domain

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestManagedKeyRoundTrip(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		k := NewManagedKey()
		if got, want := len(k.Text), KeyLen; got != want {
			t.Fatalf("len(%q) = %d, want %d", k.Text, got, want)
		}
		if !IsBearerToken(k.Text) {
			t.Fatalf("%q is not a Bearer b64token", k.Text)
		}
		id, err := ParseManagedKey(k.Text)
		if err != nil || id != k.ID {
			t.Fatalf("ParseManagedKey(%q) = %q, %v; want %q, nil", k.Text, id, err, k.ID)
		}
		if seen[k.ID] {
			t.Fatalf("id %s made twice", k.ID)
		}
		seen[k.ID] = true
	}
}

func TestParseManagedKeyRefuses(t *testing.T) {
	k := NewManagedKey().Text
	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	tests := []struct {
		name, key string
	}{
		{"empty", ""},
		{"prefix only", KeyPrefix},
		{"truncated", k[:len(k)-1]},
		{"one more character", k + "a"},
		{"secret changed", flip(k, len(KeyPrefix)+keyIDLen+5)},
		{"checksum changed", flip(k, len(k)-1)},
		{"other prefix", "bak_" + k[4:]},
		{"separator missing", k[:16] + "x" + k[17:]},
		{"id upper case", k[:4] + strings.ToUpper(k[4:16]) + k[16:]},
		{"secret with a dash", k[:20] + "-" + k[21:]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseManagedKey(tt.key)
			var r *TokenRefusal
			if !errors.As(err, &r) || r.Code != ReasonKeyMalformed || !errors.Is(err, ErrUnauthenticated) {
				t.Errorf("ParseManagedKey(%q) = %v, want a %s refusal that is a 401", tt.key, err, ReasonKeyMalformed)
			}
		})
	}
}

// FuzzParseManagedKey: any input is either refused as malformed or is a
// well-formed key whose id is its own; nothing panics, and a key with one
// character changed is never accepted as the same key.
func FuzzParseManagedKey(f *testing.F) {
	f.Add(NewManagedKey().Text)
	f.Add("aak_")
	f.Add("aak_aaaaaaaaaaaa_" + strings.Repeat("0", keySecretLen+keyChecksumLen))
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseManagedKey(s)
		if err != nil {
			if !errors.Is(err, ErrUnauthenticated) {
				t.Fatalf("ParseManagedKey(%q) error %v is not a 401", s, err)
			}
			return
		}
		if got, want := id, s[len(KeyPrefix):len(KeyPrefix)+keyIDLen]; got != want || !ValidKeyID(id) || len(s) != KeyLen {
			t.Fatalf("ParseManagedKey(%q) = %q, want %q", s, got, want)
		}
		if got := keyChecksum(s[:KeyLen-keyChecksumLen]); string(got[:]) != s[KeyLen-keyChecksumLen:] {
			t.Fatalf("accepted %q with checksum %q, want %q", s, s[KeyLen-keyChecksumLen:], got)
		}
	})
}

func TestCheckKeyUse(t *testing.T) {
	a, err := NewAuthorizer([]CustomRole{{Name: "OPS", Permissions: []Permission{PermMetricsRead}}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	key := APIKey{ID: "aaaaaaaaaaaa", Owner: "alice", Permissions: []Permission{PermMeRead, PermSessionsRead, PermAuditRead},
		ExpiresAt: now.Add(time.Hour)}
	alice := KeyOwner{Subject: "alice", Roles: []Role{RoleAuditor}}
	tests := []struct {
		name     string
		key      APIKey
		owner    KeyOwner
		wantCode string
		want     []Permission
	}{
		{"auditor's key", key, alice, "", []Permission{PermMeRead, PermSessionsRead, PermAuditRead}},
		{"owner demoted to USER: narrower at once", key, KeyOwner{Subject: "alice", Roles: []Role{RoleUser}}, "", []Permission{PermMeRead, PermSessionsRead}},
		{"owner with no role left", key, KeyOwner{Subject: "alice"}, "", nil},
		{"revoked", func() APIKey { k := key; k.RevokedAt = now; return k }(), alice, ReasonKeyRevoked, nil},
		{"expired at its instant", func() APIKey { k := key; k.ExpiresAt = now; return k }(), alice, ReasonKeyExpired, nil},
		{"owner disabled", key, KeyOwner{Subject: "alice", Roles: []Role{RoleAuditor}, Disabled: true}, ReasonKeyOwnerGone, nil},
		{"another owner's record", key, KeyOwner{Subject: "bob", Roles: []Role{RoleAdmin}}, ReasonKeyOwnerGone, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scope, err := a.CheckKeyUse(tt.key, tt.owner, now)
			if tt.wantCode != "" {
				var r *TokenRefusal
				if !errors.As(err, &r) || r.Code != tt.wantCode || !errors.Is(err, ErrUnauthenticated) {
					t.Fatalf("CheckKeyUse = %v, want a 401 %s", err, tt.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := scope.Permissions.List(); !slices.Equal(got, tt.want) {
				t.Errorf("permissions = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNarrowKey(t *testing.T) {
	a, _ := NewAuthorizer(nil)
	user := a.PermissionsOf([]Role{RoleUser})
	tests := []struct {
		name     string
		asked    []Permission
		want     []Permission
		wantCode string
		wantErr  error
	}{
		{"none asked: the owner's own", nil, user.List(), "", nil},
		{"a subset", []Permission{PermSessionsRead, PermMeRead}, []Permission{PermMeRead, PermSessionsRead}, "", nil},
		{"wider than the owner", []Permission{PermMeRead, PermAuditRead}, nil, ReasonKeyWiderThanOwner, ErrForbidden},
		{"unknown permission", []Permission{"x:y"}, nil, ReasonKeyWiderThanOwner, ErrInvalidInput},
		// A permission a user holds, spelt with a space: refused, never
		// read as another one nor dropped.
		{"a permission with a space", []Permission{PermMeRead, "sessions:read "}, nil, ReasonKeyWiderThanOwner, ErrInvalidInput},
		{"a permission in capitals", []Permission{"ME:READ"}, nil, ReasonKeyWiderThanOwner, ErrInvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NarrowKey(user, tt.asked)
			if tt.wantErr != nil {
				var r *TokenRefusal
				if !errors.As(err, &r) || r.Code != tt.wantCode || !errors.Is(err, tt.wantErr) {
					t.Fatalf("NarrowKey = %v, want %s (%v)", err, tt.wantCode, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("NarrowKey = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestKeyExpiry(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	max := 90 * 24 * time.Hour
	tests := []struct {
		name  string
		asked time.Time
		ok    bool
	}{
		{"missing", time.Time{}, false},
		{"in the past", now.Add(-time.Second), false},
		{"now", now, false},
		{"at the maximum", now.Add(max), true},
		{"past the maximum", now.Add(max + time.Second), false},
		{"tomorrow", now.Add(24 * time.Hour), true},
	}
	for _, tt := range tests {
		err := KeyExpiry(tt.asked, now, max)
		if got := err == nil; got != tt.ok {
			t.Errorf("%s: KeyExpiry = %v, want ok %v", tt.name, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%s: %v is not a 400", tt.name, err)
		}
	}
}

// A principal that carries a key scope is decided by its roles and the
// scope together, in every decision the Authorizer makes.
func TestKeyScopeNarrowsDecisions(t *testing.T) {
	a, _ := NewAuthorizer(nil)
	admin := Principal{Subject: "root", Roles: []Role{RoleAdmin}}
	scoped := admin
	scoped.Key = &KeyScope{ID: "aaaaaaaaaaaa", Owner: "root", Permissions: NewPermissionSet([]Permission{PermMeRead, PermSessionsRead, PermSessionsWrite}),
		Projects: []string{"p1"}}
	if d := a.Allow(scoped, PermSettingsWrite); d.Allowed || !strings.Contains(d.Reason(), "key aaaaaaaaaaaa") {
		t.Errorf("Allow(scoped, settings:write) = %+v (%s), want refused naming the key", d, d.Reason())
	}
	if d := a.Allow(scoped, PermSessionsRead); !d.Allowed {
		t.Errorf("Allow(scoped, sessions:read) refused: %s", d.Reason())
	}
	if got, want := a.SessionReadScope(scoped), ScopeOwn; got != want {
		t.Errorf("SessionReadScope(scoped) = %v, want %v (the key holds no sessions:manage)", got, want)
	}
	if got, want := a.SessionReadScope(admin), ScopeAll; got != want {
		t.Errorf("SessionReadScope(admin) = %v, want %v", got, want)
	}
	other := Session{ID: "s1", Owner: "bob", Project: "p1"}
	if a.CanReadSessionIn(scoped, Team{}, other) {
		t.Error("the scoped key reads another user's session")
	}
	if err := a.CheckCreateSession(scoped, Team{Member: []string{"p2"}}, "p2"); err == nil {
		t.Error("the key narrowed to p1 created a session in p2")
	}
	if err := a.CheckCreateSession(scoped, Team{Member: []string{"p1"}}, "p1"); err != nil {
		t.Errorf("CheckCreateSession(p1) = %v", err)
	}
	if got := a.PermissionsFor(scoped); !slices.Equal(got, []Permission{PermMeRead, PermSessionsRead, PermSessionsWrite}) {
		t.Errorf("Permissions(scoped) = %v", got)
	}
}
