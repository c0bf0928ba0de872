//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestQuickstartGateway runs go tool task quickstart:gateway (here on a
// free port) as a newcomer would: it reads the printed MCP endpoint, agent
// token, console URL, API key and mcp.json, and the official MCP
// TypeScript SDK (e2e/js/mcp/quickstart-client.mjs) lists the tools
// (notes.delete hidden), reads a note, is refused a delete, and has a
// write held until it is approved through the API with the printed key.
// Ctrl-C (SIGINT to its process group) then stops agentauth and the notes
// server and removes the data folder.
func TestQuickstartGateway(t *testing.T) {
	needMCPSDK(t)
	bin := filepath.Join(t.TempDir(), "quickstart")
	build := exec.Command("go", "build", "-o", bin, "./cmd/quickstart")
	build.Dir = repo
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/quickstart: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "gateway", "-port", "0")
	cmd.Dir = repo
	// A process group of its own, as a terminal gives it: Ctrl-C signals
	// the quick start and the agentauth it started alike.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	qs := startProc(t, cmd, "quickstart-gateway")
	qs.waitLine(t, 5*time.Minute, "Ctrl-C stops agentauth")
	text := strings.Join(qs.output(), "\n")
	printed := func(re string) string {
		m := regexp.MustCompile(`(?m)` + re).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("the quick start printed no %s:\n%s", re, text)
		}
		return m[1]
	}
	endpoint := printed(`^MCP endpoint: (http://127\.0\.0\.1:\d+/mcp/notes)$`)
	token := printed(`^Agent token: (\S+)$`)
	console := printed(`^Console: (http://127\.0\.0\.1:\d+)/console/\S*$`)
	key := printed(`^API key: (\S+)$`)
	data := printed(`deletes the data folder \((\S+)\)\.$`)
	if !strings.HasPrefix(endpoint, console+"/") {
		t.Errorf("MCP endpoint %s and console %s are not one agentauth", endpoint, console)
	}
	var mcpJSON struct {
		Servers map[string]struct {
			Type, URL string
			Headers   map[string]string
		}
	}
	if i := strings.Index(text, "\n{"); i < 0 {
		t.Errorf("no mcp.json printed:\n%s", text)
	} else if err := json.NewDecoder(strings.NewReader(text[i:])).Decode(&mcpJSON); err != nil {
		t.Errorf("the printed mcp.json: %v", err)
	} else if n := mcpJSON.Servers["notes"]; n.Type != "http" || n.URL != endpoint || n.Headers["Authorization"] != "Bearer "+token {
		t.Errorf("the printed mcp.json names %+v, want the endpoint and the token", n)
	}

	// The session the quick start made, to approve in.
	s := &service{url: console}
	sessions, _ := keyCall(t, s.url, key, "GET", "/api/v2/sessions", "", 200)["sessions"].([]any)
	if len(sessions) != 1 {
		t.Fatalf("sessions = %v, want the quick start's one", sessions)
	}
	session := sessions[0].(map[string]any)["id"].(string)
	steps := nodeSteps(t, "quickstart-client.mjs", []string{"MCP_URL=" + endpoint, "TOKEN=" + token}, func(step string, _ map[string]any) string {
		if step == "held" {
			id := pendingCall(t, s, key, session, "notes.write", "")
			keyCall(t, s.url, key, "POST", "/api/v2/sessions/"+session+"/tool-calls/"+id+"/approve", "", 200)
		}
		return ""
	})
	var names []string
	for _, n := range steps["tools"]["names"].([]any) {
		names = append(names, n.(string))
	}
	if !slices.Equal(names, []string{"notes.read", "notes.write"}) {
		t.Errorf("tools/list = %v, want [notes.read notes.write] (notes.delete hidden)", names)
	}
	if got, _ := steps["read"]["text"].(string); !strings.HasPrefix(got, "Hello from the notes server") {
		t.Errorf("notes.read: %v", steps["read"])
	}
	if e, _ := steps["delete"]["error"].(map[string]any); e == nil || e["code"] != -32001.0 || e["reason"] != "token_tool_not_granted" {
		t.Errorf("notes.delete: %v, want refused with -32001 token_tool_not_granted (a rule denies it, so the token lacks it)", steps["delete"])
	}
	if got, _ := steps["write"]["text"].(string); got != `note "todo" written` {
		t.Errorf("notes.write after approval: %v", steps["write"])
	}
	if got, _ := steps["read-back"]["text"].(string); got != "approve me" {
		t.Errorf("notes.read of the note written: %v", steps["read-back"])
	}

	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-qs.exited:
	case <-time.After(time.Minute):
		t.Fatal("the quick start did not stop within a minute of Ctrl-C")
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("the quick start after Ctrl-C: exit code %d, want 0", code)
	}
	if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("data folder %s after Ctrl-C: %v, want it removed", data, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", console+"/health", nil)
	if res, err := http.DefaultClient.Do(req); err == nil {
		res.Body.Close()
		t.Errorf("agentauth answers %d after Ctrl-C", res.StatusCode)
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("GET /health after Ctrl-C: %v, want connection refused", err)
	}
}

// needMCPSDK skips without Node and fails without the official MCP
// TypeScript SDK in e2e/js.
func needMCPSDK(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	if _, err := os.Stat(filepath.Join(repo, "e2e", "js", "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		t.Fatalf("e2e/js/node_modules lacks @modelcontextprotocol/sdk (run npm ci in e2e/js): %v", err)
	}
}

// nodeSteps runs the script of e2e/js/mcp with env, reading the JSON line
// it prints per step ({"step": …}); onStep runs as each arrives (to
// approve a held call meanwhile). It answers every step's line by name.
func nodeSteps(t *testing.T, script string, env []string, onStep func(step string, line map[string]any) (reply string)) map[string]map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	node := exec.CommandContext(ctx, "node", filepath.Join(repo, "e2e", "js", "mcp", script))
	node.Dir = filepath.Join(repo, "e2e", "js")
	node.Env = append(os.Environ(), env...)
	node.Stderr = logFile(t, strings.TrimSuffix(script, ".mjs"))
	out, err := node.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := node.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	steps := map[string]map[string]any{}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("%s printed %q", script, sc.Text())
		}
		step, _ := line["step"].(string)
		steps[step] = line
		if reply := onStep(step, line); reply != "" {
			if _, err := fmt.Fprintln(in, reply); err != nil {
				t.Fatalf("%s: %v", script, err)
			}
		}
	}
	if err := node.Wait(); err != nil {
		t.Fatalf("%s: %v (steps %v)", script, err, steps)
	}
	return steps
}
