package hybrid

import (
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/ports"
)

func TestKeyOfHashesTheCredential(t *testing.T) {
	bearer := ports.Credential{Kind: ports.CredentialBearer, Value: "s3cret-token-value"}
	cookie := ports.Credential{Kind: ports.CredentialCookie, Value: "s3cret-token-value"}
	other := ports.Credential{Kind: ports.CredentialBearer, Value: "s3cret-token-valuf"}

	k := keyOf(bearer)
	if got, want := k.digest, sha256.Sum256([]byte(bearer.Value)); got != want {
		t.Errorf("digest: got %x, want the SHA-256 of the value %x", got, want)
	}
	tests := []struct {
		name     string
		a, b     ports.Credential
		wantSame bool
	}{
		{"same credential", bearer, bearer, true},
		{"same value, other carrier", bearer, cookie, false},
		{"other value", bearer, other, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := keyOf(tt.a) == keyOf(tt.b); got != tt.wantSame {
				t.Errorf("keys equal: got %v, want %v", got, tt.wantSame)
			}
		})
	}
}

func newTestAnswers(t *testing.T, size int) answers {
	t.Helper()
	c, err := newAnswers(size)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func principal(name string) domain.Principal {
	return domain.Principal{Subject: name, Roles: []domain.Role{domain.RoleUser}, Method: domain.MethodHybrid}
}

func key(i int) cacheKey {
	return keyOf(ports.Credential{Kind: ports.CredentialBearer, Value: fmt.Sprint("cred-", i)})
}

func TestAnswersExpiry(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ttl := 30 * time.Second
	tests := []struct {
		name   string
		at     time.Time
		wantOK bool
	}{
		{"just stored", t0, true},
		{"one nanosecond before expiry", t0.Add(ttl - 1), true},
		{"at expiry", t0.Add(ttl), false},
		{"long after", t0.Add(time.Hour), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestAnswers(t, 4)
			c.put(key(1), principal("alice"), t0.Add(ttl))
			p, ok := c.get(key(1), tt.at)
			if ok != tt.wantOK {
				t.Fatalf("get: got ok=%v, want %v", ok, tt.wantOK)
			}
			if ok && p.Subject != "alice" {
				t.Errorf("subject: got %q, want %q", p.Subject, "alice")
			}
			if !ok && c.len() != 0 {
				t.Errorf("expired entry kept: got len %d, want 0", c.len())
			}
		})
	}
}

func TestAnswersNeverGrowsPastItsBound(t *testing.T) {
	far := time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)
	now := far.Add(-time.Hour)
	for _, max := range []int{1, 2, 7, 64} {
		t.Run(fmt.Sprint("max=", max), func(t *testing.T) {
			c := newTestAnswers(t, max)
			for i := range 10 * max {
				c.put(key(i), principal(fmt.Sprint(i)), far)
				if got := c.len(); got > max {
					t.Fatalf("after %d puts: got len %d, want at most %d", i+1, got, max)
				}
			}
			if got := c.len(); got != max {
				t.Errorf("full cache: got len %d, want %d", got, max)
			}
			// The most recent entries stay, the oldest were evicted.
			if _, ok := c.get(key(10*max-1), now); !ok {
				t.Errorf("newest entry: got evicted, want kept")
			}
			if _, ok := c.get(key(0), now); ok {
				t.Errorf("oldest entry: got kept, want evicted")
			}
		})
	}
}

func TestAnswersEvictsLeastRecentlyUsed(t *testing.T) {
	far := time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)
	now := far.Add(-time.Hour)
	c := newTestAnswers(t, 3)
	for i := range 3 {
		c.put(key(i), principal(fmt.Sprint(i)), far)
	}
	c.get(key(0), now)                 // 0 is now the most recently used; 1 the least
	c.put(key(3), principal("3"), far) // evicts 1
	for i, want := range []bool{true, false, true, true} {
		if _, got := c.get(key(i), now); got != want {
			t.Errorf("entry %d present: got %v, want %v", i, got, want)
		}
	}
}

func TestAnswersPutReplaces(t *testing.T) {
	far := time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newTestAnswers(t, 2)
	c.put(key(1), principal("old"), far)
	c.put(key(1), principal("new"), far)
	p, ok := c.get(key(1), far.Add(-time.Second))
	if !ok || p.Subject != "new" {
		t.Errorf("got %q ok=%v, want %q ok=true", p.Subject, ok, "new")
	}
	if got := c.len(); got != 1 {
		t.Errorf("len: got %d, want 1", got)
	}
}
