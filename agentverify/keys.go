package agentverify

import (
	"context"
	"net/http"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/agentauth/agentauth/internal/jwks"
)

// StaticKeys is a key set known in advance (a JWKS document read once).
type StaticKeys jose.JSONWebKeySet

// Key returns the key with that id, if the set holds it.
func (s StaticKeys) Key(_ context.Context, kid string) (*jose.JSONWebKey, error) {
	return findKey(s.Keys, kid), nil
}

func findKey(keys []jose.JSONWebKey, kid string) *jose.JSONWebKey {
	for i := range keys {
		if keys[i].KeyID == kid && keys[i].Algorithm == string(Algorithm) && keys[i].Valid() && keys[i].IsPublic() {
			return &keys[i]
		}
	}
	return nil
}

// FetchTimeout bounds one fetch of the key set, whatever client
// NewRemoteKeys is given.
const FetchTimeout = 10 * time.Second

// staleAfter is how many refetch intervals a fetched set is used for.
const staleAfter = 10

// RemoteKeys fetches the issuer's JWKS over HTTP and keeps it; an unknown
// key id fetches it again, at most once per refetch interval, so that a
// flood of made-up key ids cannot make the tool server flood agentauth. A
// set older than staleAfter refetch intervals is fetched again before use,
// so a key agentauth withdrew (rotated out past its overlap) stops
// verifying here too. A verification with a known key waits for no fetch
// (but the one of a set that old), and concurrent verifications that need
// a fetch share it.
type RemoteKeys struct {
	cache *jwks.Cache
}

// NewRemoteKeys reads the JWKS at url (agentauth's management listener
// serves it at /.well-known/jwks.json) with client (http.DefaultClient when
// nil; each fetch is bounded by FetchTimeout either way), fetching again for
// an unknown key id at most once per refetch (which must be positive).
func NewRemoteKeys(url string, client *http.Client, refetch time.Duration) *RemoteKeys {
	return newRemoteKeys(url, client, refetch, time.Now)
}

func newRemoteKeys(url string, client *http.Client, refetch time.Duration, now func() time.Time) *RemoteKeys {
	if client == nil {
		client = http.DefaultClient
	}
	c, err := jwks.New(jwks.Config{URL: url, Client: client, Timeout: FetchTimeout, MinRefetch: refetch, MaxAge: staleAfter * refetch, Now: now})
	if err != nil {
		// Only a refetch interval that is not positive gets here: a
		// programming error in the caller, as with time.NewTicker.
		panic("agentverify: NewRemoteKeys: " + err.Error())
	}
	return &RemoteKeys{cache: c}
}

// Key returns the key with that id, fetching the set when it is unknown
// and the last fetch is older than the refetch interval.
func (r *RemoteKeys) Key(ctx context.Context, kid string) (*jose.JSONWebKey, error) {
	keys, err := r.cache.Lookup(ctx, kid)
	if err != nil {
		return nil, err
	}
	return findKey(keys, kid), nil
}
