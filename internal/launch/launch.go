// Package launch builds and starts the agentauth binary as a child process
// and waits until it listens. The process tests, the end-to-end suite and
// the load generator share it, so every black-box check starts the server
// the same way a user does.
package launch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Build compiles ./cmd/agentauth of the module at root into dir.
func Build(ctx context.Context, root, dir string) (string, error) {
	bin := filepath.Join(dir, "agentauth")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/agentauth")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("launch: go build: %w\n%s", err, out)
	}
	return bin, nil
}

// Process is a running agentauth.
type Process struct {
	Cmd *exec.Cmd
	// URL is the base address it listens on, from its "listening" log line.
	URL    string
	stderr lockedBuffer
	exited chan struct{}
	err    error
}

// Start runs bin with args and the exact environment env (nothing is
// inherited), and waits up to timeout for it to log that it listens.
func Start(bin string, env []string, timeout time.Duration, args ...string) (*Process, error) {
	p := &Process{Cmd: exec.Command(bin, args...), exited: make(chan struct{})}
	p.Cmd.Env = env
	pr, pw := io.Pipe()
	p.Cmd.Stderr = io.MultiWriter(&p.stderr, pw)
	if err := p.Cmd.Start(); err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	go func() { p.err = p.Cmd.Wait(); pw.Close(); close(p.exited) }()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var line struct{ Msg, URL string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				select {
				case found <- line.URL:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case p.URL = <-found:
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("launch: agentauth exited before listening (%v):\n%s", p.err, p.Stderr())
	case <-time.After(timeout):
		p.Kill()
		return nil, fmt.Errorf("launch: agentauth did not listen within %s:\n%s", timeout, p.Stderr())
	}
}

// Stderr is everything the process logged so far.
func (p *Process) Stderr() string { return p.stderr.String() }

// Stop sends SIGTERM and waits up to timeout; it returns the exit code.
// A process that already ended (Ctrl-C in a terminal signals the whole
// process group) answers its exit code.
func (p *Process) Stop(timeout time.Duration) (int, error) {
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return -1, fmt.Errorf("launch: SIGTERM: %w", err)
	}
	select {
	case <-p.exited:
		return p.Cmd.ProcessState.ExitCode(), nil
	case <-time.After(timeout):
		p.Kill()
		return -1, fmt.Errorf("launch: no exit within %s of SIGTERM", timeout)
	}
}

// Kill ends the process at once (SIGKILL) and waits for it.
func (p *Process) Kill() {
	_ = p.Cmd.Process.Kill()
	<-p.exited
}

// lockedBuffer keeps the last maxKept bytes a process wrote: enough to
// explain a failure, bounded under a long load run's access log.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

const maxKept = 1 << 20

func (l *lockedBuffer) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if over := l.b.Len() + len(b) - maxKept; over > 0 {
		l.b.Next(min(over, l.b.Len()))
	}
	return l.b.Write(b)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
