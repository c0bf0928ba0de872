package launch

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestStopExited: a process that ended on its own before Stop (Ctrl-C in a
// terminal reaches the whole process group, agentauth too) is stopped
// with its exit code, not an error about signalling it.
func TestStopExited(t *testing.T) {
	tests := []struct {
		name string
		exit string
		want int
	}{
		{"ended well", "exit 0", 0},
		{"ended badly", "exit 3", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// It says it listens, then ends once the test writes a line to
			// the FIFO.
			fifo := filepath.Join(t.TempDir(), "go")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			p, err := Start("/bin/sh", nil, 10*time.Second, "-c",
				`echo '{"msg":"listening","url":"http://127.0.0.1:1"}' >&2; read line < "$0"; `+tt.exit, fifo)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(fifo, []byte("go\n"), 0); err != nil {
				t.Fatal(err)
			}
			<-p.exited
			code, err := p.Stop(10 * time.Second)
			if err != nil || code != tt.want {
				t.Errorf("Stop = %d, %v; want %d, nil", code, err, tt.want)
			}
		})
	}
}
