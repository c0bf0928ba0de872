// Package local runs agentauth without an external identity provider: a
// single local API key grants ADMIN. When no key is given, one is created at
// {dataDir}/secrets/api-key (256 random bits, file 0600 in a 0700 folder) and
// reused on every later start.
package local

import (
	"fmt"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/identity/apikey"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/secretfile"
)

// DataDir is the service's data directory.
type DataDir string

// KeyPath is where local mode keeps its key.
func KeyPath(dir DataDir) string { return filepath.Join(string(dir), "secrets", "api-key") }

// New loads or creates the local key and returns a ring where it grants ADMIN.
func New(dir DataDir, log *zap.Logger) (*apikey.Keyring, error) {
	path := KeyPath(dir)
	key, created, err := LoadOrCreateKey(path)
	if err != nil {
		return nil, fmt.Errorf("local mode's API key in the data folder (dataDir / SERVICE_DATA_DIR; SERVICE_API_KEY gives one instead): %w", err)
	}
	if created {
		log.Info("local mode: created a new API key; send it as Authorization: Bearer <key>", zap.String("key_file", path))
	} else {
		log.Info("local mode: using the API key in the key file", zap.String("key_file", path))
	}
	return apikey.NewKeyring([]apikey.Entry{apikey.AdminEntry(key, domain.MethodLocal, "local key")}), nil
}

// LoadOrCreateKey returns the key stored at path, creating it when absent
// (secretfile.LoadOrCreate: 256 random bits, 0600 in a 0700 folder). A key
// file readable by anyone but its owner is refused, like ssh does, and so is
// one that holds no usable API key.
func LoadOrCreateKey(path string) (key string, created bool, err error) {
	key, created, err = secretfile.LoadOrCreate(path)
	if err != nil {
		return "", false, fmt.Errorf("key file %w", err)
	}
	if len(key) < domain.MinAPIKeyLength {
		return "", false, fmt.Errorf("key file %s holds fewer than %d characters; delete it to have a new key created", path, domain.MinAPIKeyLength)
	}
	if !domain.IsBearerToken(key) {
		return "", false, fmt.Errorf("key file %s holds characters a Bearer credential cannot carry (RFC 6750); delete it to have a new key created", path)
	}
	return key, created, nil
}
