// Package local runs agentauth without an external identity provider: a
// single local API key grants ADMIN. When no key is given, one is created at
// {dataDir}/secrets/api-key (256 random bits, file 0600 in a 0700 folder) and
// reused on every later start.
package local

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/identity/apikey"
	"github.com/agentauth/agentauth/domain"
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

// LoadOrCreateKey returns the key stored at path, creating it when absent. A
// key file readable by anyone but its owner is refused, like ssh does.
func LoadOrCreateKey(path string) (key string, created bool, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", false, fmt.Errorf("local: create %s: %w", filepath.Dir(path), err)
	}
	if err := os.Chmod(filepath.Dir(path), 0o700); err != nil {
		return "", false, fmt.Errorf("local: restrict %s: %w", filepath.Dir(path), err)
	}
	key, err = ReadKey(path)
	if err == nil {
		return key, false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", false, err
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", false, fmt.Errorf("local: generate key: %w", err)
	}
	key = base64.RawURLEncoding.EncodeToString(raw[:])
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) { // another process created it first
		key, err = ReadKey(path)
		return key, false, err
	}
	if err != nil {
		return "", false, fmt.Errorf("local: create key file: %w", err)
	}
	if _, err := f.WriteString(key + "\n"); err != nil {
		f.Close()
		return "", false, fmt.Errorf("local: write key file: %w", err)
	}
	if err := errors.Join(f.Sync(), f.Close()); err != nil {
		return "", false, fmt.Errorf("local: write key file: %w", err)
	}
	return key, true, nil
}

// ReadKey returns the key stored at path, refusing a file readable by anyone
// but its owner.
func ReadKey(path string) (string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("key file %s has mode %04o; it must be readable by its owner only (chmod 600 %s)", path, perm, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("local: read key file: %w", err)
	}
	key := strings.TrimSpace(string(b))
	if len(key) < domain.MinAPIKeyLength {
		return "", fmt.Errorf("key file %s holds fewer than %d characters; delete it to have a new key created", path, domain.MinAPIKeyLength)
	}
	if !domain.IsBearerToken(key) {
		return "", fmt.Errorf("key file %s holds characters a Bearer credential cannot carry (RFC 6750); delete it to have a new key created", path)
	}
	return key, nil
}
