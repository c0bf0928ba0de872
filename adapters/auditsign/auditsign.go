// Package auditsign anchors the audit chain with signed checkpoints, like
// AWS CloudTrail's digest files: every N records, every T and at shutdown
// it signs the chain's head with an Ed25519 key the database does not hold,
// stores the checkpoint and writes it to stdout as one JSON line, so that a
// log shipper keeps a copy outside the database. Truncating the log or
// rewriting its tail with recomputed hashes then no longer goes unnoticed.
package auditsign

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/auditjson"
	"github.com/agentauth/agentauth/domain"
	"github.com/agentauth/agentauth/internal/secretfile"
	"github.com/agentauth/agentauth/ports"
)

// Settings configure the signer.
type Settings struct {
	// Key is the signing key's seed (SERVICE_AUDIT_SIGNING_KEY, or read
	// from audit.signingKeyFile, named by KeyFile); empty: the key at
	// {DataDir}/secrets/audit-signing.key, created on first start.
	Key      string
	KeyFile  string
	DataDir  string
	Every    int64         // records between checkpoints
	Interval time.Duration // time between checkpoints while records arrive
	// Out receives each checkpoint's log line (os.Stdout when nil).
	Out io.Writer
}

// DefaultKeyPath is where the key is created when none is configured.
func DefaultKeyPath(dataDir string) string {
	return filepath.Join(dataDir, "secrets", "audit-signing.key")
}

// PublicKeyPath is where the service publishes its public key.
func PublicKeyPath(dataDir string) string { return filepath.Join(dataDir, "audit-signing.pub") }

// LoadKey reads the key at the default path, creating it (0600 in a 0700
// folder) the way local mode creates its API key when it is absent. A key
// file readable by anyone but its owner is refused.
func LoadKey(dataDir string) (key ed25519.PrivateKey, path string, created bool, err error) {
	path = DefaultKeyPath(dataDir)
	text, created, err := secretfile.LoadOrCreate(path)
	if err != nil {
		return nil, path, false, fmt.Errorf("audit signing key in the data folder (dataDir / SERVICE_DATA_DIR; audit.signingKeyFile / SERVICE_AUDIT_SIGNING_KEY_FILE names another file): %w", err)
	}
	if key, err = ParseSeed(text); err != nil {
		return nil, path, false, fmt.Errorf("audit signing key %s: %w", path, err)
	}
	return key, path, created, nil
}

// ParseSeed reads a signing key given as its 32-byte Ed25519 seed in
// base64url (padding and surrounding space ignored).
func ParseSeed(text string) (ed25519.PrivateKey, error) {
	seed, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(strings.TrimSpace(text), "="))
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("want a %d-byte Ed25519 seed in base64url (as `head -c 32 /dev/urandom | basenc --base64url` writes it)", ed25519.SeedSize)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// FormatPublicKey is the text form of a public key: hex, as
// ParsePublicKey reads it.
func FormatPublicKey(pub ed25519.PublicKey) string { return hex.EncodeToString(pub) }

// ParsePublicKey reads FormatPublicKey's text (surrounding space ignored).
func ParsePublicKey(text string) (ed25519.PublicKey, error) {
	b, err := hex.DecodeString(strings.TrimSpace(text))
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("not an Ed25519 public key: want %d hex digits", 2*ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(b), nil
}

// Checkpointer signs checkpoints of the heads the audit writer reports.
type Checkpointer struct {
	store    ports.AuditCheckpointStore
	key      ed25519.PrivateKey
	keyID    string
	every    int64
	interval time.Duration
	out      io.Writer
	log      *zap.Logger

	mu       sync.Mutex
	headSeq  int64
	headHash string
	lastSeq  int64 // the head of the latest checkpoint stored by anyone

	kick chan struct{}
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

var _ ports.AuditObserver = (*Checkpointer)(nil)

// New loads (or creates) the key, refuses it when another key signed the
// latest checkpoint stored (the chain verifies under one public key),
// publishes the public key and starts the signer. The cleanup signs a last checkpoint of what was observed and
// stops; run it after the audit writer has committed everything.
func New(store ports.AuditCheckpointStore, s Settings, log *zap.Logger) (*Checkpointer, func(), error) {
	log = log.Named("audit.checkpoint")
	if s.Every < 1 || s.Interval <= 0 {
		return nil, nil, errors.New("audit: checkpointEvery must be at least 1 and checkpointInterval positive")
	}
	var (
		key     ed25519.PrivateKey
		path    = cmp.Or(s.KeyFile, "SERVICE_AUDIT_SIGNING_KEY")
		created bool
		err     error
	)
	if s.Key != "" {
		if key, err = ParseSeed(s.Key); err != nil {
			err = fmt.Errorf("audit signing key (%s): %w", path, err)
		}
	} else {
		key, path, created, err = LoadKey(s.DataDir)
	}
	if err != nil {
		return nil, nil, err
	}
	pub := key.Public().(ed25519.PublicKey)
	keyID := domain.AuditKeyID(pub)
	last, hasLast, err := store.LastCheckpoint(context.Background())
	if err != nil {
		return nil, nil, fmt.Errorf("audit: read the latest checkpoint: %w", err)
	}
	if hasLast && last.KeyID != keyID {
		how := ""
		if created {
			how = ", created now because none was configured"
		}
		return nil, nil, fmt.Errorf("audit signing key %s (key id %s%s) did not sign the latest audit checkpoint in the database "+
			"(seq %d, signed %s by key id %s): the checkpoints form one chain that verifies under one public key, so this instance does not start. "+
			"Set SERVICE_AUDIT_SIGNING_KEY or audit.signingKeyFile / SERVICE_AUDIT_SIGNING_KEY_FILE / --audit-signing-key-file to the key that "+
			"signed it (`agentauth audit public-key --audit-signing-key-file F` prints a key's id); if no key of yours has that id, "+
			"the checkpoints were altered: run agentauth audit verify",
			path, keyID, how, last.Seq, last.Time.Format(time.RFC3339), last.KeyID)
	}
	pubPath := PublicKeyPath(s.DataDir)
	if err := os.WriteFile(pubPath, []byte(FormatPublicKey(pub)+"\n"), 0o644); err != nil {
		return nil, nil, fmt.Errorf("audit: publish the public key at %s: %w", pubPath, err)
	}
	log.Info("audit checkpoints are signed; verify them with the public key", zap.String("key_file", path), zap.Bool("created", created),
		zap.String("key_id", keyID), zap.String("public_key_file", pubPath))
	out := s.Out
	if out == nil {
		out = os.Stdout
	}
	c := &Checkpointer{store: store, key: key, keyID: keyID, every: s.Every, interval: s.Interval, out: out, log: log,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if hasLast {
		c.lastSeq = last.Seq
	}
	go c.run()
	return c, c.Close, nil
}

// PublicKey is the key checkpoints verify under.
func (c *Checkpointer) PublicKey() ed25519.PublicKey { return c.key.Public().(ed25519.PublicKey) }

// DeriveKey returns a 32-byte key for purpose, derived from the signing
// key's seed with HKDF-SHA-256 (RFC 5869): one per purpose, none revealing
// the seed or another.
func (c *Checkpointer) DeriveKey(purpose string) []byte {
	key, err := hkdf.Key(sha256.New, c.key.Seed(), nil, purpose, 32)
	if err != nil {
		panic(err) // 32 bytes of SHA-256 output: within HKDF's bound
	}
	return key
}

// Observe records that the chain's head is now (seq, hash), durable. It
// never blocks: signing happens on the signer's goroutine.
func (c *Checkpointer) Observe(seq int64, hash string) {
	c.mu.Lock()
	if seq > c.headSeq {
		c.headSeq, c.headHash = seq, hash
	}
	due := c.headSeq-c.lastSeq >= c.every
	c.mu.Unlock()
	if due {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
}

// Close signs a last checkpoint and stops the signer.
func (c *Checkpointer) Close() {
	c.once.Do(func() { close(c.stop) })
	<-c.done
}

func (c *Checkpointer) run() {
	defer close(c.done)
	tick := time.NewTicker(c.interval)
	defer tick.Stop()
	for {
		select {
		case <-c.kick:
		case <-tick.C:
		case <-c.stop:
			c.checkpoint()
			return
		}
		c.checkpoint()
	}
}

// checkpoint signs the observed head unless a checkpoint (of this or
// another instance) already covers it.
func (c *Checkpointer) checkpoint() {
	c.mu.Lock()
	seq, hash, last := c.headSeq, c.headHash, c.lastSeq
	c.mu.Unlock()
	if seq <= last {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var (
		covered int64
		foreign *domain.AuditCheckpoint
	)
	cp, stored, err := c.store.AppendCheckpoint(ctx, func(prev *domain.AuditCheckpoint) (domain.AuditCheckpoint, bool) {
		cp := domain.AuditCheckpoint{Seq: seq, Hash: hash, Time: time.Now()}
		if prev != nil {
			if prev.KeyID != c.keyID { // another instance's key: not this chain's to extend
				foreign, covered = prev, seq
				return domain.AuditCheckpoint{}, false
			}
			if prev.Seq >= seq {
				covered = prev.Seq
				return domain.AuditCheckpoint{}, false
			}
			cp.Prev = prev.Digest()
		}
		cp.Sign(c.key)
		return cp, true
	})
	if err != nil {
		c.log.Error("audit checkpoint not stored; the next one will cover its records", zap.Int64("seq", seq), zap.Error(err))
		return
	}
	if foreign != nil {
		// Tried again after the next checkpointEvery records or interval.
		c.log.Error("audit checkpoint not signed: the latest checkpoint in the database is signed by another key; every instance on the database must sign with the one key (SERVICE_AUDIT_SIGNING_KEY or audit.signingKeyFile): set it and restart",
			zap.Int64("seq", seq), zap.String("key_id", c.keyID), zap.String("chain_key_id", foreign.KeyID), zap.Int64("chain_seq", foreign.Seq))
	}
	c.mu.Lock()
	c.lastSeq = max(c.lastSeq, cp.Seq, covered)
	c.mu.Unlock()
	if stored {
		c.publish(cp)
	}
}

// publish writes the checkpoint's log line in one write, so lines of
// other writers to the same stream do not interleave with it.
func (c *Checkpointer) publish(cp domain.AuditCheckpoint) {
	line, err := json.Marshal(auditjson.LogLine{Level: "info", TS: time.Now().UTC().Format("2006-01-02T15:04:05.000Z0700"), Logger: "audit.checkpoint",
		Msg: auditjson.LogMessage, Checkpoint: auditjson.FromCheckpoint(cp)})
	if err == nil {
		_, err = c.out.Write(append(line, '\n'))
	}
	if err != nil {
		c.log.Error("audit checkpoint stored but not written to the log", zap.Int64("seq", cp.Seq), zap.Error(err))
	}
}
