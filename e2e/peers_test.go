//go:build e2e

package e2e

// Real, independent OpenID providers built from the Go module proxy (the
// module e2e/peers, kept out of agentauth's go.mod), and the browser that
// signs in at them: Debian's Chromium driven by playwright-core
// (e2e/js/providers/browser-login.mjs).

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// peer is a provider the suite builds from the Go module proxy.
type peer struct {
	name, version string
	// dir is its module's folder under e2e/peers; pkg the main package
	// built there; sources the files besides go.mod and go.sum whose
	// content decides the build.
	dir, pkg string
	sources  []string
	// tags are its build tags.
	tags string
}

var (
	zitadelPeer = peer{name: "zitadelop", version: "v3.52.0", dir: ".", pkg: "./zitadelop", sources: []string{"zitadelop/main.go"}}
	// Hydra's in-memory store is SQLite (cgo), built in only with these
	// tags, as Hydra's own -sqlite images are.
	hydraPeer = peer{name: "hydra", version: "v2.3.0", dir: "hydra", pkg: "github.com/ory/hydra/v2", tags: "sqlite,sqlite_omit_load_extension"}
)

// binary builds the peer once per version and source, into
// $AGENTAUTH_PEERS_CACHE, else the user cache folder's agentauth-peers: a
// warm run reuses it.
func (p peer) binary(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(repo, "e2e", "peers", p.dir)
	h := sha256.New()
	for _, f := range append([]string{"go.mod", "go.sum"}, p.sources...) {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	h.Write([]byte(runtime.Version() + " " + p.tags))
	cache := os.Getenv("AGENTAUTH_PEERS_CACHE")
	if cache == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			t.Fatalf("no cache folder for the peers (set AGENTAUTH_PEERS_CACHE): %v", err)
		}
		cache = filepath.Join(c, "agentauth-peers")
	}
	bin := filepath.Join(cache, fmt.Sprintf("%s-%s-%x", p.name, p.version, h.Sum(nil)[:6]), p.name)
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := bin + ".partial"
	start := time.Now()
	build := exec.Command("go", "build", "-tags", p.tags, "-o", tmp, p.pkg)
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the %s peer (%s) in e2e/peers/%s: %v\n%s", p.name, p.version, p.dir, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	t.Logf("built the %s peer (%s) in %s, cached at %s", p.name, p.version, time.Since(start).Round(time.Millisecond), bin)
	return bin
}

// browserSession is what the browser saw after signing in.
type browserSession struct {
	Me     me
	Cookie string // the user_session cookie's value
}

// browserLogin signs user in through Chromium at s's GET /auth/login and
// returns /api/v2/me as the browser saw it, with the session cookie
// (checked HttpOnly, SameSite=Lax, not Secure on loopback http).
func browserLogin(t *testing.T, s *service, user, password string) browserSession {
	t.Helper()
	landing := s.url + "/api/v2/me"
	cmd := exec.Command("node", filepath.Join(repo, "e2e", "js", "providers", "browser-login.mjs"),
		s.url+"/auth/login?return_to=/api/v2/me", user, password, landing)
	cmd.Stderr = logFile(t, "browser-"+user)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("browser login as %s: %v (see the browser log)", user, err)
	}
	var res struct {
		URL     string `json:"url"`
		Body    string `json:"body"`
		Cookies []struct {
			Name     string `json:"name"`
			Value    string `json:"value"`
			HTTPOnly bool   `json:"httpOnly"`
			Secure   bool   `json:"secure"`
			SameSite string `json:"sameSite"`
		} `json:"cookies"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("browser login output %q: %v", out, err)
	}
	var bs browserSession
	if err := json.Unmarshal([]byte(res.Body), &bs.Me); err != nil {
		t.Fatalf("%s in the browser: %q: %v", res.URL, res.Body, err)
	}
	for _, c := range res.Cookies {
		if c.Name != "user_session" {
			continue
		}
		bs.Cookie = c.Value
		if !c.HTTPOnly || c.SameSite != "Lax" || c.Secure {
			t.Errorf("user_session cookie: HttpOnly=%v SameSite=%s Secure=%v; want HttpOnly, Lax, not Secure on loopback http", c.HTTPOnly, c.SameSite, c.Secure)
		}
	}
	if bs.Cookie == "" {
		t.Fatalf("no user_session cookie in the browser after signing in as %s", user)
	}
	return bs
}

// withCookie is GET /api/v2/me with the user_session cookie value.
func withCookie(t *testing.T, s *service, cookie string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.url+"/api/v2/me", nil)
	req.AddCookie(&http.Cookie{Name: "user_session", Value: cookie})
	return do(t, noRedirects(nil), req)
}
