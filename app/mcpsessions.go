package app

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"time"
)

// mcpSessionMaxAge is how long a gateway MCP session id opens; the client
// then gets 404 and initializes again, as MCP clients do.
const mcpSessionMaxAge = 24 * time.Hour

// maxEndedSessions bounds the ids this instance remembers as ended.
const maxEndedSessions = 100_000

// mcpSession is one MCP session through the gateway: the server's own
// session id (the client never sees it) and when it opened. Sealed, it
// is: the opening time (8 bytes, Unix seconds), the SHA-256 of who opened
// it for which agent (ownerOf), then the server's id; the server's name is
// the additional data.
type mcpSession struct {
	Upstream string
	Opened   int64
}

// sealedHead is the fixed part of a sealed session: time and owner hash.
const sealedHead = 8 + sha256.Size

// mcpSessions opens and ends gateway MCP sessions. A session id is the
// session itself, sealed (AES-256-GCM, the server's name as additional
// data) under a key every instance derives from the one agent-token
// signing key: any instance of a cluster opens it, no instance stores it,
// and a client cannot read the server's session id nor forge one. An id
// ended here (DELETE, the server's 404) is refused here at once; on other
// instances the server's own 404 for its ended session ends it.
type mcpSessions struct {
	aead cipher.AEAD
	mu   sync.Mutex
	// ended are the ids ended on this instance, until they would expire.
	ended map[string]time.Time
	// streams are the relayed streams of each session on this instance,
	// ended with the session.
	streams map[string]*sessionStreams
	// ctx ends when the server shuts down, and with it every stream.
	ctx  context.Context
	stop context.CancelFunc
	now  func() time.Time
}

type sessionStreams struct {
	ctx    context.Context
	cancel context.CancelFunc
	n      int
}

// newMCPSessions seals with key (32 bytes); nil: a random key, which
// only this process opens.
func newMCPSessions(key []byte) (*mcpSessions, error) {
	if key == nil {
		key = make([]byte, 32)
		_, _ = rand.Read(key) // crypto/rand.Read never fails on supported platforms
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("gateway session key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("gateway session key: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	return &mcpSessions{aead: aead, ended: map[string]time.Time{}, streams: map[string]*sessionStreams{}, ctx: ctx, stop: stop, now: time.Now}, nil
}

// add opens a session of owner at server and returns its id.
func (s *mcpSessions) add(server, owner, upstream string) (string, error) {
	plain := make([]byte, sealedHead, sealedHead+len(upstream))
	binary.BigEndian.PutUint64(plain, uint64(s.now().Unix()))
	h := sha256.Sum256([]byte(owner))
	copy(plain[8:], h[:])
	plain = append(plain, upstream...)
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	_, _ = rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, plain, []byte(server))), nil
}

// get opens session id of owner at server: false for an id that does not
// open, of another server or owner, expired, or ended here.
func (s *mcpSessions) get(id, server, owner string) (*mcpSession, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil || len(raw) < s.aead.NonceSize() {
		return nil, false
	}
	plain, err := s.aead.Open(raw[s.aead.NonceSize():s.aead.NonceSize()], raw[:s.aead.NonceSize()], raw[s.aead.NonceSize():], []byte(server))
	if err != nil || len(plain) < sealedHead {
		return nil, false
	}
	ms := mcpSession{Opened: int64(binary.BigEndian.Uint64(plain)), Upstream: string(plain[sealedHead:])}
	h := sha256.Sum256([]byte(owner))
	if subtle.ConstantTimeCompare(plain[8:sealedHead], h[:]) != 1 || s.now().Sub(time.Unix(ms.Opened, 0)) > mcpSessionMaxAge {
		return nil, false
	}
	s.mu.Lock()
	_, ended := s.ended[id]
	s.mu.Unlock()
	return &ms, !ended
}

// remove ends session id on this instance: it is refused here from now
// on, and its relayed streams end. The maps keep copies of the ids: a
// request's header (Fiber's c.Get) points into a buffer reused by the
// next request.
func (s *mcpSessions) remove(id string, ms *mcpSession) {
	id = strings.Clone(id)
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.streams[id]; ok {
		st.cancel()
		delete(s.streams, id)
	}
	if len(s.ended) >= maxEndedSessions {
		for k, until := range s.ended {
			if now.After(until) {
				delete(s.ended, k)
			}
		}
	}
	if len(s.ended) < maxEndedSessions {
		s.ended[id] = time.Unix(ms.Opened, 0).Add(mcpSessionMaxAge)
	}
}

// stream returns the context of a stream relayed for session id, which
// ends with the session (remove) or the server; release when the stream ends.
func (s *mcpSessions) stream(id string) (context.Context, func()) {
	id = strings.Clone(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.streams[id]
	if !ok {
		ctx, cancel := context.WithCancel(s.ctx)
		st = &sessionStreams{ctx: ctx, cancel: cancel}
		s.streams[id] = st
	}
	st.n++
	return st.ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if st.n--; st.n == 0 {
			st.cancel()
			if s.streams[id] == st {
				delete(s.streams, id)
			}
		}
	}
}
