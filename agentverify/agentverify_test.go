package agentverify_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/agentauth/agentauth/adapters/agenttoken"
	"github.com/agentauth/agentauth/adapters/auditsign"
	"github.com/agentauth/agentauth/agentverify"
	"github.com/agentauth/agentauth/domain"
)

const issuer = "https://agentauth.test"

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// newSeed is a fresh key's seed as configured.
func newSeed() string {
	seed := make([]byte, ed25519.SeedSize)
	_, _ = rand.Read(seed)
	return base64.RawURLEncoding.EncodeToString(seed)
}

func newSigner(t testing.TB, s agenttoken.Settings) *agenttoken.Signer {
	t.Helper()
	if s.Issuer == "" {
		s.Issuer = issuer
	}
	if s.DataDir == "" {
		s.DataDir = t.TempDir()
	}
	sg, err := agenttoken.New(s)
	if err != nil {
		t.Fatal(err)
	}
	return sg
}

func grant(at time.Time) domain.AgentGrant {
	return domain.AgentGrant{ID: "tok_1", Subject: "uma", Chain: []string{"agt_root", "agt_child"}, Audience: "fs", Session: "ses_1",
		Mode: domain.ModeAuto, Tools: []string{"fs.read"}, IssuedAt: at, Expires: at.Add(5 * time.Minute)}
}

func sign(t testing.TB, sg *agenttoken.Signer, g domain.AgentGrant) string {
	t.Helper()
	tok, err := sg.Sign(g)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// signWith signs claims with another key or algorithm, as an attacker or
// another issuer would.
func signWith(t *testing.T, alg jose.SignatureAlgorithm, key any, kid string, c agentverify.Claims) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(c).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func claimsOf(g domain.AgentGrant, iss string) agentverify.Claims {
	return agentverify.Claims{
		Claims: jwt.Claims{Issuer: iss, Subject: g.Subject, Audience: jwt.Audience{g.Audience}, ID: g.ID,
			IssuedAt: jwt.NewNumericDate(g.IssuedAt), Expiry: jwt.NewNumericDate(g.Expires)},
		ClientID: g.Agent(), Scope: strings.Join(g.Tools, " "),
		Act: agentverify.ActorChain(g.Chain), Session: g.Session, Mode: string(g.Mode),
	}
}

// signTyped signs payload (claims, or raw JSON) with key under kid and
// the JWT header typ ("" for none), as a holder of the signing key could.
func signTyped(t *testing.T, key ed25519.PrivateKey, kid, typ string, payload any) string {
	t.Helper()
	opts := &jose.SignerOptions{}
	if typ != "" {
		opts = opts.WithType(jose.ContentType(typ))
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if raw, ok := payload.(string); ok {
		jws, err := s.Sign([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		tok, err := jws.CompactSerialize()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	tok, err := jwt.Signed(s).Claims(payload).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestVerify(t *testing.T) {
	oldKey := newSeed()
	until := t0.Add(time.Hour)
	now := t0
	clock := func() time.Time { return now }
	old := newSigner(t, agenttoken.Settings{Key: oldKey, Now: clock})
	curSeed := newSeed()
	cur := newSigner(t, agenttoken.Settings{Key: curSeed, PreviousKey: oldKey, PreviousUntil: until, Now: clock})
	curKey, err := auditsign.ParseSeed(curSeed)
	if err != nil {
		t.Fatal(err)
	}
	curKid := cur.JWKS().Keys[0].KeyID
	otherClient := claimsOf(grant(t0), issuer)
	otherClient.ClientID = "agt_root"
	noClient := claimsOf(grant(t0), issuer)
	noClient.ClientID = ""
	other := newSigner(t, agenttoken.Settings{Issuer: "https://elsewhere.test"})
	kid := old.JWKS().Keys[0].KeyID
	_, stranger, _ := ed25519.GenerateKey(rand.Reader)

	good := sign(t, cur, grant(t0))
	tampered := []byte(good)
	// Another base64url character in the signature (flipping a bit may
	// leave the alphabet, which is a malformed token, not a forged one).
	if i := len(tampered) - 5; tampered[i] == 'A' {
		tampered[i] = 'B'
	} else {
		tampered[i] = 'A'
	}
	noAct := grant(t0)
	noAct.Chain = nil
	deep := grant(t0)
	deep.Chain = make([]string, agentverify.MaxChain+1)
	for i := range deep.Chain {
		deep.Chain[i] = "agt"
	}
	tests := []struct {
		name     string
		token    string
		audience string
		at       time.Time
		code     string
	}{
		{"valid", good, "fs", t0, ""},
		{"valid under the previous key during the overlap", sign(t, old, grant(t0.Add(30*time.Minute))), "fs", t0.Add(30 * time.Minute), ""},
		{"previous key past the overlap", sign(t, old, grant(until)), "fs", until.Add(time.Minute), agentverify.ReasonUnknownKey},
		{"wrong audience", good, "sh", t0, agentverify.ReasonAudience},
		{"expired", good, "fs", t0.Add(6 * time.Minute), agentverify.ReasonExpired},
		{"issued in the future", good, "fs", t0.Add(-time.Hour), agentverify.ReasonNotYetValid},
		{"another issuer's token (its key is unknown)", sign(t, other, grant(t0)), "fs", t0, agentverify.ReasonUnknownKey},
		{"another issuer named, our key id, another key", signWith(t, jose.EdDSA, stranger, kid, claimsOf(grant(t0), "https://elsewhere.test")), "fs", t0, agentverify.ReasonSignature},
		{"our issuer, our key id, another key", signWith(t, jose.EdDSA, stranger, kid, claimsOf(grant(t0), issuer)), "fs", t0, agentverify.ReasonSignature},
		{"HS256 with the public key as secret", signWith(t, jose.HS256, []byte(kid), kid, claimsOf(grant(t0), issuer)), "fs", t0, agentverify.ReasonAlgorithm},
		{"tampered signature", string(tampered), "fs", t0, agentverify.ReasonSignature},
		{"not a JWT", "abc.def", "fs", t0, agentverify.ReasonMalformed},
		{"no acting agent", sign(t, cur, noAct), "fs", t0, agentverify.ReasonClaims},
		{"chain deeper than the cap", sign(t, cur, deep), "fs", t0, agentverify.ReasonClaims},
		{"our key, typ JWT", signTyped(t, curKey, curKid, "JWT", claimsOf(grant(t0), issuer)), "fs", t0, agentverify.ReasonType},
		{"our key, no typ", signTyped(t, curKey, curKid, "", claimsOf(grant(t0), issuer)), "fs", t0, agentverify.ReasonType},
		{"our key, typ application/at+jwt", signTyped(t, curKey, curKid, "application/at+jwt", claimsOf(grant(t0), issuer)), "fs", t0, ""},
		{"our key, typ AT+JWT", signTyped(t, curKey, curKid, "AT+JWT", claimsOf(grant(t0), issuer)), "fs", t0, ""},
		{"our key, claims that do not parse", signTyped(t, curKey, curKid, "at+jwt", `{"iss":"`+issuer+`","exp":"soon"}`), "fs", t0, agentverify.ReasonClaims},
		{"our key, a payload that is no JSON object", signTyped(t, curKey, curKid, "at+jwt", `[1,2]`), "fs", t0, agentverify.ReasonClaims},
		{"our key, no client_id", signTyped(t, curKey, curKid, "at+jwt", noClient), "fs", t0, agentverify.ReasonClaims},
		{"our key, client_id other than the acting agent", signTyped(t, curKey, curKid, "at+jwt", otherClient), "fs", t0, agentverify.ReasonClaims},
	}
	for _, tt := range tests {
		now = tt.at
		v, err := agentverify.New(issuer, tt.audience, cur, agentverify.WithClock(clock))
		if err != nil {
			t.Fatal(err)
		}
		tok, err := v.Verify(context.Background(), tt.token)
		var ve *agentverify.Error
		switch {
		case tt.code == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.code == "" && (tok.User != "uma" || !slices.Equal(tok.Agents, []string{"agt_root", "agt_child"}) || tok.Agent() != "agt_child" ||
			tok.Session != "ses_1" || !tok.Permits("FS.READ") || tok.Permits("fs.write")):
			t.Errorf("%s: %+v", tt.name, tok)
		case tt.code != "" && (!errors.As(err, &ve) || ve.Code != tt.code):
			t.Errorf("%s: got %v, want %s", tt.name, err, tt.code)
		}
	}
}

func TestRemoteKeys(t *testing.T) {
	sg := newSigner(t, agenttoken.Settings{})
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetches.Add(1)
		_ = json.NewEncoder(w).Encode(sg.JWKS())
	}))
	defer srv.Close()
	keys := agentverify.NewRemoteKeys(srv.URL, srv.Client(), time.Hour)
	v, err := agentverify.New(issuer, "fs", keys)
	if err != nil {
		t.Fatal(err)
	}
	tok := sign(t, sg, grant(time.Now()))
	for range 3 {
		if _, err := v.Verify(context.Background(), tok); err != nil {
			t.Fatal(err)
		}
	}
	// Made-up key ids do not make the verifier fetch again within the
	// refetch interval.
	other := sign(t, newSigner(t, agenttoken.Settings{}), grant(time.Now()))
	for range 5 {
		var ve *agentverify.Error
		if _, err := v.Verify(context.Background(), other); !errors.As(err, &ve) || ve.Code != agentverify.ReasonUnknownKey {
			t.Fatalf("unknown key: %v", err)
		}
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("%d fetches, want 1", n)
	}
}

// BenchmarkMint signs one token (the signer's part of a mint).
func BenchmarkMint(b *testing.B) {
	sg := newSigner(b, agenttoken.Settings{})
	g := grant(time.Now())
	b.ReportAllocs()
	for b.Loop() {
		sign(b, sg, g)
	}
}

// BenchmarkVerifyOffline verifies one token with a cached key set, as a
// tool server does.
func BenchmarkVerifyOffline(b *testing.B) {
	sg := newSigner(b, agenttoken.Settings{})
	tok := sign(b, sg, grant(time.Now()))
	v, err := agentverify.New(issuer, "fs", agentverify.StaticKeys(sg.JWKS()))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(context.Background(), tok); err != nil {
			b.Fatal(err)
		}
	}
}
