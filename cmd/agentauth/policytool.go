package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentauth/agentauth/config"
)

// policyCanTool runs "agentauth policy can --tool …": the running
// service's simulation of a tool call (GET /api/v2/policies/simulate).
func policyCanTool(args []string, env map[string]string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("policy can", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, policyUsage) }
	var roles multiFlag
	fs.Var(&roles, "role", "a role of the caller (repeat for several)")
	tool := fs.String("tool", "", "the tool called")
	argsJSON := fs.String("args", "{}", "the call's arguments, a JSON object")
	subject := fs.String("subject", "", "whom the call is decided for")
	project := fs.String("project", "", "the session's project")
	mode := fs.String("mode", "auto", "the session's mode")
	depth := fs.Int("depth", 0, "the acting agent's depth (root agent: 0)")
	server := fs.String("server", "", "the server the call goes to")
	url := fs.String("url", "http://127.0.0.1:8080", "the service's base URL")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if *tool == "" || fs.NArg() > 0 {
		fmt.Fprint(stderr, "agentauth policy can: --tool names the tool\n\n"+policyUsage)
		return exitUsage
	}
	if !json.Valid([]byte(*argsJSON)) {
		fmt.Fprintf(stderr, "agentauth policy can: --args %q is not JSON\n", *argsJSON)
		return exitUsage
	}
	key := strings.TrimSpace(env["AGENTAUTH_KEY"])
	if key == "" {
		cfg := config.Defaults()
		if d := env["SERVICE_DATA_DIR"]; d != "" {
			cfg.DataDir = d
		}
		b, err := os.ReadFile(filepath.Join(cfg.DataDir, "secrets", "api-key"))
		if err != nil {
			fmt.Fprintf(stderr, "agentauth policy can: no key: set AGENTAUTH_KEY (a key whose role has policies:read): %v\n", err)
			return exitUsage
		}
		key = strings.TrimSpace(string(b))
	}
	q := neturl.Values{"tool": {*tool}, "args": {*argsJSON}, "role": roles, "subject": {*subject}, "project": {*project},
		"mode": {*mode}, "depth": {strconv.Itoa(*depth)}, "server": {*server}}
	req, err := http.NewRequest("GET", strings.TrimSuffix(*url, "/")+"/api/v2/policies/simulate?"+q.Encode(), nil)
	if err != nil {
		fmt.Fprintf(stderr, "agentauth policy can: --url: %v\n", err)
		return exitUsage
	}
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "agentauth policy can: %v\n", err)
		return exitFailure
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if res.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "agentauth policy can: the service answered %d: %s\n", res.StatusCode, raw)
		return exitFailure
	}
	var out struct {
		Decision, Reason, Rule, Message string
		Steps                           []struct {
			Rule struct {
				ID, Effect, Tool, Scope, Value, When string
			}
			Result, Error string
		}
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		fmt.Fprintf(stderr, "agentauth policy can: the service's answer: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "%s: %s (%s)\n", out.Decision, out.Message, out.Reason)
	for _, st := range out.Steps {
		r := st.Rule
		when := ""
		if r.When != "" {
			when = " when " + r.When
		}
		fmt.Fprintf(stdout, "  %s %s %s for %s %s%s: %s", r.ID, r.Effect, r.Tool, r.Scope, r.Value, when, st.Result)
		if st.Error != "" {
			fmt.Fprintf(stdout, " (%s)", st.Error)
		}
		fmt.Fprintln(stdout)
	}
	if out.Decision == "allow" {
		return exitOK
	}
	return exitFailure
}
