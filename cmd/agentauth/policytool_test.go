package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/agentauth/agentauth/config"
	"github.com/agentauth/agentauth/wire"
)

// TestPolicyCanTool: agentauth policy can --tool asks a running service
// which rule decides a call with these arguments, and why.
func TestPolicyCanTool(t *testing.T) {
	const key = "policy-can-key-0123456789abcdef"
	cfg := config.Defaults()
	cfg.DataDir, cfg.Auth.APIKey = t.TempDir(), key
	srv, cleanup, err := wire.APIKey(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	defer func() { cancel(); <-served }()
	url := "http://" + ln.Addr().String()
	for _, rule := range []string{
		`{"effect":"allow","tool":"fs.*","scope":"role","value":"USER","when":"args.path.startsWith(\"/srv/\")"}`,
		`{"effect":"deny","tool":"fs.write","scope":"role","value":"USER","when":"args.env == \"prod\""}`,
	} {
		req, _ := http.NewRequest("POST", url+"/api/v2/policies", bytes.NewReader([]byte(rule)))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil || res.StatusCode != 201 {
			t.Fatalf("POST /api/v2/policies: %v %v", res, err)
		}
		var created map[string]any
		_ = json.NewDecoder(res.Body).Decode(&created)
		res.Body.Close()
	}
	env := map[string]string{"AGENTAUTH_KEY": key}
	for _, tc := range []struct {
		args   []string
		code   int
		output []string
	}{
		{[]string{"--tool", "fs.write", "--args", `{"path":"/srv/a","env":"dev"}`, "--role", "USER"}, exitOK,
			[]string{"allow: policy rule pol_", "(its condition args.path.startsWith(\"/srv/\") holds) (policy_allow)", `when args.env == "prod": does not hold`, ": decides"}},
		{[]string{"--tool", "fs.write", "--args", `{"path":"/srv/a","env":"prod"}`, "--role", "USER"}, exitFailure,
			[]string{"deny: policy rule pol_", "(policy_deny)", ": decides", ": not reached"}},
		{[]string{"--tool", "fs.write", "--args", `{"path":"/srv/a"}`, "--role", "USER"}, exitFailure,
			[]string{"(policy_condition_error)", ": error (no such key: env)"}},
		{[]string{"--tool", "fs.write", "--args", `not json`, "--role", "USER"}, exitUsage, nil},
	} {
		var out, errOut bytes.Buffer
		code := run(append([]string{"policy", "can", "--url", url}, tc.args...), env, &out, &errOut)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d\n%s%s", tc.args, code, tc.code, out.String(), errOut.String())
		}
		for _, want := range tc.output {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%v: output lacks %q:\n%s", tc.args, want, out.String())
			}
		}
	}
}
