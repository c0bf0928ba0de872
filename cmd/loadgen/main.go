// Command loadgen measures agentauth on loopback and prints, in one run, the
// table of issue 10: requests per second, ratio to GET /health of the same
// process, p50 and p99 of
//
//   - GET /health, GET /api/v2/me and GET /api/v2/sessions (20 stored) with
//     an API key (the server in API-key mode on SQLite);
//   - GET /api/v2/me with a Keycloak Bearer access token and with a
//     user_session cookie (the server in OIDC mode against the Keycloak
//     stand-in of e2e/keycloak-standin, started here as the e2e suite does);
//
// then oauth2-proxy v7.15.6 beside agentauth for the same Bearer token
// (throughput and each server's CPU per request, peer.go), then the
// tool-call decision with 10, 1,000 and 10,000 policy rules in
// process and over HTTP, then an allowed MCP tools/call through the
// gateway beside the same call sent to a trivial upstream directly and
// through two bare proxies in a process of their own (the standard
// library's reverse proxy, and fasthttp's server and client: the floor of
// the gateway's own HTTP hops on the machine), and
// the server's RSS idle and under load. Rows report the server's CPU per
// request (user and system, from /proc) where the server is agentauth's
// process. Everything binds 127.0.0.1 on free ports and runs for a bounded
// time. Client and server share the machine, so compare ratios, not
// absolute figures, across machines.
//
// With -postgres, decisions are also measured across two instances sharing
// one PostgreSQL database.
//
//	go run ./cmd/loadgen [-duration 5s] [-conns 64] [-decision-conns 64] [-apikey=false] [-oidc=false] [-peer=false] [-decisions=false] [-gateway=false] [-postgres URL] [-bin other/agentauth]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/agentauth/agentauth/internal/launch"
	"github.com/agentauth/agentauth/internal/standin"
)

func main() {
	if upstream := os.Getenv(proxyEnv); upstream != "" {
		if err := serveBareProxy(os.Getenv(proxyKindEnv), upstream); err != nil {
			fmt.Fprintln(os.Stderr, "loadgen: bare proxy:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

const apiKey = "loadgen-key-0123456789abcdef"

// The stand-in's realm (deploy/keycloak/realm-agents.json) and the client
// the e2e suite uses.
const (
	realm        = standin.Realm
	clientID     = standin.ClientID
	clientSecret = standin.ClientSecret
	user, pass   = "bob", "bob-pw"
)

type options struct {
	duration, warmup     time.Duration
	conns, decisionConns int
}

func run() error {
	var o options
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "how long to drive each endpoint")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "unmeasured warm-up before each measurement")
	flag.IntVar(&o.conns, "conns", 64, "concurrent keep-alive connections")
	flag.IntVar(&o.decisionConns, "decision-conns", 64, "concurrent connections for tool-call decisions")
	withOIDC := flag.Bool("oidc", true, "measure the Bearer and cookie rows against the Keycloak stand-in (needs node)")
	withDecisions := flag.Bool("decisions", true, "measure tool-call decisions at 10, 1,000 and 10,000 rules")
	withPeer := flag.Bool("peer", true, "measure oauth2-proxy beside agentauth with the same Bearer token (builds it once; needs node)")
	withGateway := flag.Bool("gateway", true, "measure an allowed tools/call through the MCP gateway beside the same call sent to the upstream")
	withAPIKey := flag.Bool("apikey", true, "measure the API-key rows (health, /me, 20 sessions) and the RSS")
	pgURL := flag.String("postgres", "", "a PostgreSQL URL (a database loadgen may create a schema in): also measure decisions across two instances sharing it")
	prebuilt := flag.String("bin", "", "an agentauth binary to measure (another build, to compare); empty: build ./cmd/agentauth")
	flag.Parse()

	tmp, err := os.MkdirTemp("", "agentauth-loadgen")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := *prebuilt
	if bin == "" {
		if bin, err = launch.Build(context.Background(), ".", tmp); err != nil {
			return err
		}
	}
	fmt.Printf("agentauth load run: %d connections, %s per row after %s warm-up; %d CPUs (GOMAXPROCS), %s\n\n",
		o.conns, o.duration, o.warmup, runtime.GOMAXPROCS(0), cpuModel())

	var rss rssFigures
	if *withAPIKey {
		if err := apiKeyRows(o, bin, tmp, &rss); err != nil {
			return err
		}
	}
	if *withOIDC {
		if err := oidcRows(o, bin, tmp); err != nil {
			return err
		}
	}
	if *withPeer {
		if err := peerRows(o, bin, tmp); err != nil {
			return err
		}
	}
	if *withDecisions {
		if err := decisionRows(o, bin, tmp); err != nil {
			return err
		}
	}
	if *withDecisions && *pgURL != "" {
		if err := postgresDecisionRow(o, bin, tmp, *pgURL); err != nil {
			return err
		}
	}
	if *withGateway {
		fmt.Println()
		if err := gatewayRows(o, bin, tmp); err != nil {
			return err
		}
	}
	if *withAPIKey {
		fmt.Printf("\nRSS of the API-key server: idle %.1f MB (after start), under load max %.1f MB (goal < 40 / < 80 MB)\n",
			rss.idle, rss.peak)
	}
	return nil
}

// apiKeyRows runs the server in API-key mode on SQLite with 20 sessions.
func apiKeyRows(o options, bin, tmp string, rss *rssFigures) error {
	dir := filepath.Join(tmp, "apikey")
	p, err := launch.Start(bin, serverEnv(dir, "SERVICE_API_KEY="+apiKey), 30*time.Second, "serve")
	if err != nil {
		return err
	}
	defer p.Kill()
	time.Sleep(time.Second) // settle before the idle figure
	rss.idle = rssMB(p.Cmd.Process.Pid)
	auth := header{"Authorization", "Bearer " + apiKey}
	for i := range 20 {
		if _, err := call("POST", p.URL+"/api/v2/sessions", fmt.Sprintf(`{"title":"load %d"}`, i), auth); err != nil {
			return fmt.Errorf("create session: %w", err)
		}
	}
	stop := rss.watch(p.Cmd.Process.Pid)
	defer stop()
	printHeader("API-key mode, SQLite")
	rows := []row{
		{name: "GET /api/v2/me, API key", req: request{method: "GET", url: p.URL + "/api/v2/me", header: auth}},
		{name: "GET /api/v2/sessions, API key, 20 stored", req: request{method: "GET", url: p.URL + "/api/v2/sessions", header: auth}},
	}
	return measureRows(o, p.URL, p.Cmd.Process.Pid, rows)
}

// oidcRows runs the Keycloak stand-in and the server in OIDC mode.
func oidcRows(o options, bin, tmp string) error {
	servicePort, err := freePort()
	if err != nil {
		return err
	}
	idp, err := standin.Start(".", 0, servicePort, io.Discard)
	if err != nil {
		return err
	}
	defer idp.Stop()
	issuer := idp.Issuer
	dir := filepath.Join(tmp, "oidc")
	p, err := launch.Start(bin, serverEnv(dir,
		"SERVICE_OIDC_ENABLED=true", "SERVICE_OIDC_ISSUER="+issuer, "SERVICE_OIDC_CLIENT_ID="+clientID,
		"SERVICE_OIDC_CLIENT_SECRET="+clientSecret, fmt.Sprintf("SERVICE_OIDC_REDIRECT_URI=http://127.0.0.1:%d/auth/callback", servicePort),
		fmt.Sprintf("SERVICE_PORT=%d", servicePort)), 30*time.Second, "serve")
	if err != nil {
		return err
	}
	defer p.Kill()
	token, err := passwordGrant(issuer)
	if err != nil {
		return err
	}
	cookie, err := cookieLogin(p.URL)
	if err != nil {
		return err
	}
	printHeader("OIDC mode, Keycloak stand-in, SQLite")
	rows := []row{
		{name: "GET /api/v2/me, Keycloak Bearer token", req: request{method: "GET", url: p.URL + "/api/v2/me", header: header{"Authorization", "Bearer " + token}}},
		{name: "GET /api/v2/me, user_session cookie", req: request{method: "GET", url: p.URL + "/api/v2/me", header: header{"Cookie", "user_session=" + cookie}}},
	}
	return measureRows(o, p.URL, p.Cmd.Process.Pid, rows)
}

type row struct {
	name string
	req  request
}

// measureRows drives /health, then each row, then /health again; each row's
// ratio is to the mean of the two /health runs, which brackets the noise of
// a shared machine.
func measureRows(o options, base string, pid int, rows []row) error {
	health := request{method: "GET", url: base + "/health", server: pid}
	h1 := drive(health, o.conns, o.warmup, o.duration)
	results := make([]result, len(rows))
	for i, r := range rows {
		if r.req.server == 0 {
			r.req.server = pid
		}
		results[i] = drive(r.req, o.conns, o.warmup, o.duration)
	}
	h2 := drive(health, o.conns, o.warmup, o.duration)
	h := (h1.rps + h2.rps) / 2
	fmt.Println(line("GET /health (first, last run)", h1, h) + fmt.Sprintf("  / %.0f req/s", h2.rps))
	for i, r := range rows {
		fmt.Println(line(r.name, results[i], h))
	}
	for i, r := range results {
		if r.failed > 0 {
			return fmt.Errorf("%s: %d requests failed: %s", rows[i].name, r.failed, r.lastErr)
		}
	}
	return nil
}

func printHeader(title string) {
	fmt.Printf("%s\n%-44s %10s %7s %10s %10s %9s\n", title, "request", "req/s", "ratio", "p50", "p99", "CPU/req")
}

func line(name string, r result, health float64) string {
	ratio := 0.0
	if health > 0 {
		ratio = r.rps / health
	}
	return fmt.Sprintf("%-44s %10.0f %7.2f %10s %10s %9s", name, r.rps, ratio, round(r.p50), round(r.p99), cpuPerRequest(r))
}

// cpuPerRequest is the server's CPU per request in µs, "-" when the row's
// server is not agentauth's process.
func cpuPerRequest(r result) string {
	if r.cpu == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f µs", float64(r.cpu.Nanoseconds())/1e3)
}

func round(d time.Duration) string {
	switch {
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	default:
		return d.Round(time.Microsecond).String()
	}
}

// serverEnv is the exact environment of a server with its data in dir;
// extra comes first, so that it wins over the defaults after it.
func serverEnv(dir string, extra ...string) []string {
	return append(extra, "PATH="+os.Getenv("PATH"), "HOME="+dir, "SERVICE_DATA_DIR="+dir, "SERVICE_PORT=0", "SERVICE_HOST=127.0.0.1")
}

// passwordGrant asks the stand-in for an access token for bob.
func passwordGrant(issuer string) (string, error) {
	form := url.Values{"grant_type": {"password"}, "client_id": {clientID}, "client_secret": {clientSecret},
		"username": {user}, "password": {pass}, "scope": {"openid"}}
	body, err := call("POST", issuer+"/protocol/openid-connect/token", form.Encode(), header{"Content-Type", "application/x-www-form-urlencoded"})
	if err != nil {
		return "", fmt.Errorf("token endpoint: %w", err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(body, &tok); err != nil || tok.AccessToken == "" {
		return "", fmt.Errorf("token endpoint answered no access token: %v", err)
	}
	return tok.AccessToken, nil
}

// cookieLogin logs bob in by password and returns the user_session cookie.
func cookieLogin(base string) (string, error) {
	res, err := callFull("POST", base+"/auth/login", fmt.Sprintf(`{"username":%q,"password":%q}`, user, pass), header{"Content-Type", "application/json"})
	if err != nil {
		return "", fmt.Errorf("POST /auth/login: %w", err)
	}
	for _, c := range res.cookies {
		if name, value, ok := strings.Cut(c, "="); ok && name == "user_session" {
			value, _, _ = strings.Cut(value, ";")
			return value, nil
		}
	}
	return "", fmt.Errorf("POST /auth/login set no user_session cookie")
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "CPU unknown"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if name, value, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(name) == "model name" {
			return strings.TrimSpace(value)
		}
	}
	return "CPU unknown"
}
