//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentauth/agentauth/internal/testwait"
)

// proc is a process a test started. Its standard output and error go to the
// test's log file (printed when the test fails) and are kept, so that the
// test can wait for a line instead of for time to pass.
type proc struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has exited and its output is read

	mu    sync.Mutex
	lines []string
	grew  chan struct{} // closed, then replaced, when a line arrives or the output ends
	ended bool
}

// startProc starts cmd, its output into the log file name, and stops it
// when the test ends.
func startProc(t testing.TB, cmd *exec.Cmd, name string) *proc {
	t.Helper()
	log := logFile(t, name)
	r, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, exited: make(chan struct{}), grew: make(chan struct{})}
	go func() {
		_ = cmd.Wait() // returns once the output is copied into w
		_ = w.Close()
	}()
	go func() {
		defer close(p.exited)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			fmt.Fprintln(log, sc.Text())
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			close(p.grew)
			p.grew = make(chan struct{})
			p.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, r) // a line over the scanner's bound: keep the process unblocked
		p.mu.Lock()
		p.ended = true
		close(p.grew)
		p.mu.Unlock()
	}()
	t.Cleanup(p.stop)
	return p
}

// waitLine returns the first line of the process's output that contains
// every one of want, waiting for it up to within; the test fails when the
// process ends first or the time runs out.
func (p *proc) waitLine(t testing.TB, within time.Duration, want ...string) string {
	t.Helper()
	line, _ := p.waitLineFrom(t, 0, within, want...)
	return line
}

// waitLineFrom is waitLine over the lines from the from-th on (0: the
// first); it also answers the line's index.
func (p *proc) waitLineFrom(t testing.TB, from int, within time.Duration, want ...string) (string, int) {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	seen := from
	for {
		p.mu.Lock()
		lines, grew, ended := p.lines, p.grew, p.ended
		p.mu.Unlock()
		for ; seen < len(lines); seen++ {
			if containsAll(lines[seen], want) {
				return lines[seen], seen
			}
		}
		if ended {
			t.Fatalf("%s ended without saying %q", p.name, want)
		}
		select {
		case <-grew:
		case <-deadline.C:
			t.Fatalf("%s did not say %q within %s", p.name, want, within)
		}
	}
}

// saw reports whether a line of the output so far contains every one of want.
func (p *proc) saw(want ...string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.ContainsFunc(p.lines, func(l string) bool { return containsAll(l, want) })
}

func containsAll(s string, subs []string) bool {
	for _, w := range subs {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

// stop ends the process (SIGTERM, then SIGKILL after 10 s) and waits for it.
func (p *proc) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// startAgentauth runs the built agentauth serve on free loopback ports,
// with a home and data folder of its own and env (a later variable
// replaces an earlier one of the same name), and returns once it listens.
func startAgentauth(t testing.TB, name string, env ...string) *service {
	t.Helper()
	port, mgmt := freePort(t), freePort(t)
	cmd := exec.Command(binary, "serve")
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + t.TempDir(),
		"SERVICE_PORT=" + fmt.Sprint(port),
		"SERVICE_MANAGEMENT_PORT=" + fmt.Sprint(mgmt),
		"SERVICE_DATA_DIR=" + t.TempDir(),
	}, env...)
	for _, kv := range cmd.Env { // the ports a caller chose
		if v, ok := strings.CutPrefix(kv, "SERVICE_PORT="); ok {
			fmt.Sscan(v, &port)
		}
		if v, ok := strings.CutPrefix(kv, "SERVICE_MANAGEMENT_PORT="); ok {
			fmt.Sscan(v, &mgmt)
		}
	}
	s := &service{url: fmt.Sprintf("http://127.0.0.1:%d", port), mgmt: fmt.Sprintf("http://127.0.0.1:%d", mgmt)}
	s.proc = startProc(t, cmd, fmt.Sprintf("%s-%d", name, port))
	s.cmd = cmd
	s.proc.waitLine(t, hung, `"listening"`, fmt.Sprintf(`127.0.0.1:%d"`, port))
	return s
}

// hung is how long a process may take to start or become ready before a
// test calls it hung: long enough for a busy machine (Keycloak took 2m38 to
// start at load 28), and never what a test measures.
const hung = 3 * time.Minute

// waitReady waits until the management listener's /health/ready says ok
// (readiness follows the identity provider and the store).
func (s *service) waitReady(t testing.TB) {
	t.Helper()
	testwait.Until(t, hung, s.mgmt+"/health/ready", func() (bool, string) {
		resp, err := http.Get(s.mgmt + "/health/ready")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK, fmt.Sprintf("%d %s", resp.StatusCode, b)
	})
}

// output is the process's output so far, one line each.
func (p *proc) output() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.lines)
}
