// Package datadir prepares the data folder (dataDir): it holds the SQLite
// database, the audit log and the local API key, so only its owner may
// enter it.
package datadir

import (
	"fmt"
	"os"

	"go.uber.org/zap"
)

// Secure creates dir with mode 0700, or restricts an existing one to its
// owner: a folder left 0755 by mkdir or an older release is tightened, with
// a warning, rather than refused, because the service owns it and nothing
// it holds is meant for anyone else. A folder the process cannot restrict
// (another owner) stops the start.
func Secure(dir string, log *zap.Logger) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("dataDir / SERVICE_DATA_DIR / --data-dir: create %s: %w", dir, err)
	}
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("dataDir / SERVICE_DATA_DIR / --data-dir: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("dataDir / SERVICE_DATA_DIR / --data-dir: %s is not a folder", dir)
	}
	perm := info.Mode().Perm()
	if perm&0o077 == 0 {
		return nil
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("dataDir / SERVICE_DATA_DIR / --data-dir: %s has mode %04o and cannot be restricted to its owner (chown it to this user or chmod 700 it): %w", dir, perm, err)
	}
	log.Warn("restricted the data folder to its owner: it holds the database and keys",
		zap.String("path", dir), zap.String("was", fmt.Sprintf("%04o", perm)), zap.String("now", "0700"))
	return nil
}
