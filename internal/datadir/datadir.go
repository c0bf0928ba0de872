// Package datadir prepares the data folder (dataDir): it holds the SQLite
// database, the audit log and the local API key, so only its owner may
// enter it.
package datadir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"go.uber.org/zap"
)

// Secure creates dir with mode 0700, or restricts an existing one to its
// owner: a folder left 0755 by mkdir or an older release is tightened, with
// a warning, rather than refused, because the service owns it and nothing
// it holds is meant for anyone else. A folder of another owner (a mounted
// volume) is left as it is, with a warning: refusing it would stop every
// pod whose volume belongs to root.
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
	err = os.Chmod(dir, 0o700)
	if errors.Is(err, fs.ErrPermission) {
		// Not ours: a volume the platform mounted (a Kubernetes emptyDir or
		// claim owned by root with fsGroup). Everything the service creates
		// in it is owner-only (files 0600, folders 0700), so say so and go on.
		log.Warn("the data folder is readable by others and belongs to another user, so it cannot be restricted; the files the service creates in it are owner-only",
			zap.String("path", dir), zap.String("mode", fmt.Sprintf("%04o", perm)))
		return nil
	}
	if err != nil {
		return fmt.Errorf("dataDir / SERVICE_DATA_DIR / --data-dir: restrict %s (mode %04o) to its owner: %w", dir, perm, err)
	}
	log.Warn("restricted the data folder to its owner: it holds the database and keys",
		zap.String("path", dir), zap.String("was", fmt.Sprintf("%04o", perm)), zap.String("now", "0700"))
	return nil
}
