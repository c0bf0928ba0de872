package domain

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// AuditCheckpoint anchors the audit chain outside the records: a signature,
// by a key the database does not hold, over the chain's head at one moment.
// Checkpoints form their own chain through Prev, so deleting one shows too.
// Rewriting or truncating the records before a checkpoint can then no
// longer go unnoticed, even with every record hash recomputed.
type AuditCheckpoint struct {
	Seq       int64     // the last record covered
	Hash      string    // that record's Hash
	Time      time.Time // when it was signed (microseconds, UTC)
	Prev      string    // Digest of the previous checkpoint; "" for the first
	KeyID     string    // AuditKeyID of the signing key
	Signature string    // hex Ed25519 signature over Payload
}

// auditCheckpointTag starts every checkpoint payload.
const auditCheckpointTag = "agentauth audit checkpoint v1\n"

// Payload is what the checkpoint's signature covers: auditCheckpointTag,
// then seq and time (Unix microseconds) as 8-byte big-endian numbers and
// hash, prev and key id each as an 8-byte big-endian length and its bytes.
func (c AuditCheckpoint) Payload() []byte {
	b := make([]byte, 0, len(auditCheckpointTag)+5*8+len(c.Hash)+len(c.Prev)+len(c.KeyID)+3*8)
	b = append(b, auditCheckpointTag...)
	b = binary.BigEndian.AppendUint64(b, uint64(c.Seq))
	b = binary.BigEndian.AppendUint64(b, uint64(c.Time.UnixMicro()))
	for _, s := range []string{c.Hash, c.Prev, c.KeyID} {
		b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

// Digest identifies the checkpoint: hex SHA-256 of its Payload. The next
// checkpoint's Prev holds it.
func (c AuditCheckpoint) Digest() string {
	sum := sha256.Sum256(c.Payload())
	return hex.EncodeToString(sum[:])
}

// AuditKeyID is the fingerprint a checkpoint names its key by: the first
// 16 bytes of the SHA-256 of the public key, in hex.
func AuditKeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:16])
}

// Sign sets KeyID and Signature with key, after Time is truncated to the
// microsecond the payload keeps.
func (c *AuditCheckpoint) Sign(key ed25519.PrivateKey) {
	c.Time = c.Time.UTC().Truncate(time.Microsecond)
	c.KeyID = AuditKeyID(key.Public().(ed25519.PublicKey))
	c.Signature = hex.EncodeToString(ed25519.Sign(key, c.Payload()))
}

// ErrCheckpointSignature is returned by VerifySignature.
var ErrCheckpointSignature = errors.New("checkpoint signature invalid")

// VerifySignature checks the signature with the key keys hold under the
// checkpoint's KeyID.
func (c AuditCheckpoint) VerifySignature(keys map[string]ed25519.PublicKey) error {
	pub, ok := keys[c.KeyID]
	if !ok {
		return fmt.Errorf("%w: key id %q is not among the %d public key(s) given", ErrCheckpointSignature, c.KeyID, len(keys))
	}
	sig, err := hex.DecodeString(c.Signature)
	if err != nil || !ed25519.Verify(pub, c.Payload(), sig) {
		return fmt.Errorf("%w: the signature does not match the checkpoint's fields under key %s", ErrCheckpointSignature, c.KeyID)
	}
	return nil
}
