// Package secretfile reads and creates the service's secret files — API
// keys, signing keys, a client secret or a database URL in a *_FILE
// setting — under one rule: a file others may read is refused, as ssh
// refuses a private key, and errors name the file, never its content.
package secretfile

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Read returns the secret in the file at path without its surrounding white
// space (the trailing newline editors and echo add). The file must be
// readable by its owner only and must not be empty.
func Read(path string) (string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("%s has mode %04o; it must be readable by its owner only (chmod 600 %s)", path, perm, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return s, nil
}

// LoadOrCreate returns the secret at path, creating it when absent: 32
// random bytes in unpadded base64url (43 characters), in a file 0600 whose
// folder is made (and kept) 0700. Of two processes creating it at once,
// both end with the one written first.
func LoadOrCreate(path string) (secret string, created bool, err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", false, fmt.Errorf("create %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return "", false, fmt.Errorf("restrict %s: %w", dir, err)
	}
	secret, err = Read(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return secret, false, err
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", false, fmt.Errorf("generate a secret: %w", err)
	}
	secret = base64.RawURLEncoding.EncodeToString(raw[:])
	// Written whole under a private name, then linked into place: link(2)
	// fails when path exists, so no reader ever sees a half-written file.
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return "", false, fmt.Errorf("create %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(secret + "\n")
	if err := errors.Join(werr, tmp.Chmod(0o600), tmp.Sync(), tmp.Close()); err != nil {
		return "", false, fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) { // another process created it first
		secret, err = Read(path)
		return secret, false, err
	} else if err != nil {
		return "", false, fmt.Errorf("create %s: %w", path, err)
	}
	return secret, true, nil
}
