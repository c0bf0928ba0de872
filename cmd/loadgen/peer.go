package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/agentauth/agentauth/internal/launch"
	"github.com/agentauth/agentauth/internal/standin"
)

// The peer: oauth2-proxy, built from the Go module proxy at the version
// e2e/peers/oauth2proxy pins, and cached like the e2e suite's peers.
const (
	peerName    = "oauth2-proxy"
	peerVersion = "v7.15.6"
	peerModule  = "e2e/peers/oauth2proxy"
	peerPackage = "github.com/oauth2-proxy/oauth2-proxy/v7"
)

// peerRows measures, in one run, GET /api/v2/me of agentauth in OIDC mode
// and oauth2-proxy in front of a static upstream, both checking the same
// Keycloak stand-in Bearer access token on every request
// (--skip-jwt-bearer-tokens: oauth2-proxy verifies the JWT against the
// issuer's keys and forwards; no session, no cookie). Each row reports
// the server's own CPU time per request, from /proc.
func peerRows(o options, bin, tmp string) error {
	proxyBin, err := peerBinary()
	if err != nil {
		return err
	}
	servicePort, err := freePort()
	if err != nil {
		return err
	}
	idp, err := standin.Start(".", 0, servicePort, io.Discard)
	if err != nil {
		return err
	}
	defer idp.Stop()
	ours, err := launch.Start(bin, serverEnv(filepath.Join(tmp, "peer"),
		"SERVICE_OIDC_ENABLED=true", "SERVICE_OIDC_ISSUER="+idp.Issuer, "SERVICE_OIDC_CLIENT_ID="+clientID,
		"SERVICE_OIDC_CLIENT_SECRET="+clientSecret, fmt.Sprintf("SERVICE_OIDC_REDIRECT_URI=http://127.0.0.1:%d/auth/callback", servicePort),
		fmt.Sprintf("SERVICE_PORT=%d", servicePort)), 30*time.Second, "serve")
	if err != nil {
		return err
	}
	defer ours.Kill()
	peer, peerURL, err := startPeer(proxyBin, idp.Issuer, filepath.Join(tmp, "oauth2-proxy.log"))
	if err != nil {
		return err
	}
	defer func() { _ = peer.Process.Kill(); _ = peer.Wait() }()
	token, err := passwordGrant(idp.Issuer)
	if err != nil {
		return err
	}
	bearer := header{"Authorization", "Bearer " + token}
	if _, err := call("GET", peerURL+"/", "", header{}); err == nil {
		return fmt.Errorf("%s answered a request without a token: it is not checking tokens", peerName)
	}
	rows := []struct {
		name string
		pid  int
		req  request
	}{
		{"agentauth GET /api/v2/me, Bearer", ours.Cmd.Process.Pid, request{method: "GET", url: ours.URL + "/api/v2/me", header: bearer}},
		{peerName + " " + peerVersion + ", same Bearer", peer.Process.Pid, request{method: "GET", url: peerURL + "/", header: bearer}},
	}
	fmt.Printf("\nThe peer: the same Keycloak stand-in Bearer token, %d connections\n%-44s %10s %12s %10s %10s\n",
		o.conns, "request", "req/s", "CPU/request", "p50", "p99")
	rps := make([]float64, len(rows))
	for i, r := range rows {
		drive(r.req, o.conns, 0, o.warmup)
		cpu0, err := cpuTime(r.pid)
		if err != nil {
			return err
		}
		res := drive(r.req, o.conns, 0, o.duration)
		cpu1, err := cpuTime(r.pid)
		if err != nil {
			return err
		}
		if res.failed > 0 || res.ok == 0 {
			return fmt.Errorf("%s: %d requests failed: %s", r.name, res.failed, res.lastErr)
		}
		rps[i] = res.rps
		perRequest := (cpu1 - cpu0) / time.Duration(res.ok)
		fmt.Printf("%-44s %10.0f %12s %10s %10s\n", r.name, res.rps, round(perRequest), round(res.p50), round(res.p99))
	}
	fmt.Printf("agentauth answers %.1f× the peer's requests per second\n", rps[0]/rps[1])
	return nil
}

// startPeer runs oauth2-proxy on a free loopback port, its log in logPath,
// and waits until it answers.
func startPeer(bin, issuer, logPath string) (*exec.Cmd, string, error) {
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(bin,
		"--http-address="+addr,
		"--provider=keycloak-oidc", "--oidc-issuer-url="+issuer,
		"--client-id="+clientID, "--client-secret="+clientSecret,
		"--redirect-url=http://"+addr+"/oauth2/callback",
		"--cookie-secret="+base64.RawURLEncoding.EncodeToString(secret),
		"--email-domain=*", "--upstream=static://200", "--skip-jwt-bearer-tokens",
		// The stand-in's access tokens name the account audience, as
		// Keycloak's do.
		"--oidc-extra-audience=account")
	log, err := os.Create(logPath)
	if err != nil {
		return nil, "", err
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("start %s: %w", peerName, err)
	}
	url := "http://" + addr
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, err := call("GET", url+"/ping", "", header{}); err == nil {
			return cmd, url, nil
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	out, _ := os.ReadFile(logPath)
	return nil, "", fmt.Errorf("%s did not answer /ping within 30s:\n%s", peerName, out)
}

// peerBinary builds the peer once per pinned module and Go version into
// $AGENTAUTH_PEERS_CACHE, else the user cache folder's agentauth-peers
// (where the e2e suite keeps its peers), and reuses it after.
func peerBinary() (string, error) {
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum", "tools.go"} {
		b, err := os.ReadFile(filepath.Join(peerModule, f))
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	h.Write([]byte(runtime.Version()))
	cache := os.Getenv("AGENTAUTH_PEERS_CACHE")
	if cache == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no cache folder for the peer (set AGENTAUTH_PEERS_CACHE): %w", err)
		}
		cache = filepath.Join(c, "agentauth-peers")
	}
	bin := filepath.Join(cache, fmt.Sprintf("%s-%s-%x", peerName, peerVersion, h.Sum(nil)[:6]), peerName)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", err
	}
	fmt.Printf("building %s %s once (cached at %s) …\n", peerName, peerVersion, bin)
	tmp := bin + ".partial"
	build := exec.Command("go", "build", "-o", tmp, peerPackage)
	build.Dir = peerModule
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s %s in %s: %w\n%s", peerName, peerVersion, peerModule, err, out)
	}
	return bin, os.Rename(tmp, bin)
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// cpuTime is the user and system CPU time the process used so far.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("CPU time of %d: %w", pid, err)
	}
	// Fields after the command name, which is in parentheses and may hold
	// spaces: state is field 3, utime 14, stime 15.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("CPU time of %d: unreadable /proc stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("CPU time of %d: unreadable /proc stat", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("CPU time of %d: unreadable /proc stat", pid)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}
