package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentauth/agentauth/internal/launch"
	"github.com/agentauth/agentauth/internal/notes"
)

// The names the gateway quick start registers.
const (
	notesServer     = "notes"
	notesCredential = "notes-token"
	// tokenTTL is the agent token's lifetime (auth.agentTokens.maxTTL is
	// raised to it): a first session with an MCP client outlasts the
	// default 15 minutes.
	tokenTTL = 8 * time.Hour
)

// runGateway is quickstart gateway: agentauth in local mode in front of
// the sample notes server, set up as docs/gateway.md's walkthrough does it
// (server, imported tools, three rules, a session, an agent, its token).
func runGateway(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("quickstart gateway", flag.ContinueOnError)
	port := fs.Int("port", defaultPort, "agentauth's port on 127.0.0.1 (0: any free port)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	root, err := repositoryRoot()
	if err != nil {
		return err
	}
	servicePort, err := usablePort(*port, "-port")
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "agentauth-quickstart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	// The notes server's own credential, which only the gateway holds: a
	// file in gateway.credentialsDir, its name registered with the server.
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	creds := filepath.Join(tmp, "credentials")
	if err := os.Mkdir(creds, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(creds, notesCredential), []byte(hex.EncodeToString(secret)), 0o600); err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	endpoint, stopNotes := serveNotes(l, notes.NewStore(), hex.EncodeToString(secret))
	defer stopNotes()

	fmt.Fprintln(stdout, "Building agentauth …")
	bin, err := launch.Build(ctx, root, tmp)
	if err != nil {
		return err
	}
	data := filepath.Join(tmp, "data")
	svc, err := launch.Start(bin, []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + tmp, "SERVICE_DATA_DIR=" + data,
		"SERVICE_HOST=127.0.0.1", fmt.Sprintf("SERVICE_PORT=%d", servicePort),
		"SERVICE_GATEWAY_CREDENTIALS_DIR=" + creds,
		"SERVICE_AGENT_TOKENS_MAX_TTL=" + tokenTTL.String(),
	}, 30*time.Second, "serve")
	if err != nil {
		return err
	}
	defer svc.Kill()
	key, err := os.ReadFile(filepath.Join(data, "secrets", "api-key"))
	if err != nil {
		return fmt.Errorf("local mode's API key: %w", err)
	}
	api := &apiClient{base: svc.URL, key: strings.TrimSpace(string(key))}
	s, err := setUpGateway(ctx, api, endpoint)
	s.Data = data
	if err != nil {
		return fmt.Errorf("%w\nagentauth's log:\n%s", err, svc.Stderr())
	}
	printGateway(stdout, api, s)

	<-ctx.Done()
	fmt.Fprintln(stdout, "Stopping agentauth and the notes server …")
	if code, err := svc.Stop(30 * time.Second); err != nil || code != 0 {
		return fmt.Errorf("agentauth stopped with exit code %d (%v):\n%s", code, err, svc.Stderr())
	}
	return nil
}

// gatewaySetUp is what the quick start made.
type gatewaySetUp struct {
	MCPURL, Session, Agent, Token string
	// Data is agentauth's data folder, removed at the end.
	Data     string
	Imported []string
}

// setUpGateway does through the API what docs/gateway.md's walkthrough
// does with curl: register the server with its endpoint and credential,
// import its tools, allow notes.read, deny notes.delete, ask for
// notes.write (for ADMIN, local mode's role), make a session (mode auto:
// the rules decide) with an agent, and mint the agent's token.
func setUpGateway(ctx context.Context, api *apiClient, endpoint string) (gatewaySetUp, error) {
	s := gatewaySetUp{MCPURL: api.base + "/mcp/" + notesServer}
	if err := api.do(ctx, "POST", "/api/v2/servers", map[string]string{
		"name": notesServer, "url": s.MCPURL, "endpoint": endpoint, "credential": notesCredential}, 201, nil); err != nil {
		return s, err
	}
	var imported struct {
		Add []struct{ Name string } `json:"add"`
	}
	if err := api.do(ctx, "POST", "/api/v2/servers/"+notesServer+"/tools/import", map[string]bool{"apply": true}, 200, &imported); err != nil {
		return s, err
	}
	for _, t := range imported.Add {
		s.Imported = append(s.Imported, t.Name)
	}
	for _, rule := range [][2]string{{"allow", notes.Read}, {"deny", notes.Delete}, {"ask", notes.Write}} {
		if err := api.do(ctx, "POST", "/api/v2/policies", map[string]string{
			"effect": rule[0], "tool": rule[1], "scope": "role", "value": "ADMIN"}, 201, nil); err != nil {
			return s, err
		}
	}
	var id struct{ ID string }
	if err := api.do(ctx, "POST", "/api/v2/sessions", map[string]string{"title": "quickstart", "mode": "auto"}, 201, &id); err != nil {
		return s, err
	}
	s.Session = id.ID
	if err := api.do(ctx, "POST", "/api/v2/sessions/"+s.Session+"/agents", map[string]string{}, 201, &id); err != nil {
		return s, err
	}
	s.Agent = id.ID
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := api.do(ctx, "POST", "/api/v2/sessions/"+s.Session+"/agents/"+s.Agent+"/token",
		map[string]string{"audience": notesServer, "ttl": tokenTTL.String()}, 200, &tok); err != nil {
		return s, err
	}
	s.Token = tok.AccessToken
	return s, nil
}

func printGateway(w io.Writer, api *apiClient, s gatewaySetUp) {
	type server struct {
		Type    string            `json:"type"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
	}
	mcpJSON, _ := json.MarshalIndent(map[string]map[string]server{"servers": {notesServer: {
		Type: "http", URL: s.MCPURL, Headers: map[string]string{"Authorization": "Bearer " + s.Token}}}}, "", "  ")
	fmt.Fprintf(w, `
agentauth's MCP gateway runs in front of the sample notes server (local mode, a fresh data folder).
Done through the API, as docs/gateway.md does it step by step:
  registered the server %q (its endpoint and credential %q: only the gateway holds it)
  imported its tools: %s
  rules for ADMIN: allow %s, deny %s, ask for %s
  session %s (mode auto) with agent %s, and the agent's token for %q (valid %s)

MCP endpoint: %s
Agent token: %s
Console: %s/console/approvals
API key: %s

Sign in to the console with the API key (ADMIN); the Approvals page holds the calls that ask.
The key also works as "Authorization: Bearer" on the API (%s/api/v2/…).

mcp.json for an MCP client (VS Code; Claude Code and others take the same shape):
%s

The agent sees %s and %s (tools/list hides %s, which a rule denies); a call of %s waits
until someone approves it on the Approvals page. Every call is on the console's Gateway calls page.

Ctrl-C stops agentauth and the notes server and deletes the data folder (%s).
`, notesServer, notesCredential, strings.Join(s.Imported, ", "), notes.Read, notes.Delete, notes.Write,
		s.Session, s.Agent, notesServer, strings.TrimSuffix(tokenTTL.String(), "0m0s"), s.MCPURL, s.Token, api.base, api.key, api.base, mcpJSON,
		notes.Read, notes.Write, notes.Delete, notes.Write, s.Data)
}

// apiClient calls agentauth's API with the local API key.
type apiClient struct {
	base, key string
}

// do sends body as JSON and decodes the answer into out (when not nil);
// an answer other than want is an error naming the call and the answer.
func (a *apiClient) do(ctx context.Context, method, path string, body any, want int, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	got, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if res.StatusCode != want {
		return fmt.Errorf("%s %s answered %d, want %d: %s", method, path, res.StatusCode, want, strings.TrimSpace(string(got)))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(got, out); err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	return nil
}
