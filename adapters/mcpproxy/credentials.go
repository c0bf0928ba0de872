package mcpproxy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentauth/agentauth/domain"
)

// credentialTTL is how long a read credential is used before the file is
// read again (a rotated Secret is picked up within it).
const credentialTTL = 10 * time.Second

// Credentials reads the servers' upstream credentials from a folder (a
// mounted Secret, gateway.credentialsDir), a file per credential name,
// keeping each for credentialTTL so that a call costs no file read
// (ports.UpstreamCredentials).
type Credentials struct {
	dir string
	mu  sync.Mutex
	m   map[string]cachedCredential
}

type cachedCredential struct {
	value string
	read  time.Time
}

// NewCredentials reads credentials from dir ("" holds none).
func NewCredentials(dir string) *Credentials {
	return &Credentials{dir: dir, m: map[string]cachedCredential{}}
}

// Credential returns the value of sv's credential; "" for none. A server
// whose upstream authorizes each person (upstream_auth) has no credential
// of the gateway's: asking for one fails, so that such a server is never
// called without the person's own token.
func (cc *Credentials) Credential(_ context.Context, sv domain.Server) (string, error) {
	if sv.UpstreamAuth != nil {
		return "", fmt.Errorf("server %s authorizes each person's calls (upstream_auth %s): the gateway has no credential of its own for it", sv.Name, sv.UpstreamAuth.Type)
	}
	name := sv.Credential
	if name == "" {
		return "", nil
	}
	if cc.dir == "" {
		return "", fmt.Errorf("credential %s: gateway.credentialsDir is not set", name)
	}
	if err := domain.ValidateCredentialName(name); err != nil {
		return "", err
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if c, ok := cc.m[name]; ok && time.Since(c.read) < credentialTTL {
		return c.value, nil
	}
	b, err := os.ReadFile(filepath.Join(cc.dir, name))
	if err != nil {
		return "", fmt.Errorf("credential %s: %w", name, err)
	}
	v := strings.TrimRight(string(b), "\r\n")
	if !domain.IsBearerToken(v) {
		return "", fmt.Errorf("credential %s: not a Bearer token (RFC 6750 characters)", name)
	}
	cc.m[name] = cachedCredential{value: v, read: time.Now()}
	return v, nil
}
