package pgurl

import (
	"strings"
	"testing"
)

func TestParseNeverEchoesThePassword(t *testing.T) {
	tests := []string{
		"mysql://root:hunter2@db/x",
		"postgres://u:hunter2@db:port/x",
		"postgres://u:hunter2@db/x?pool_max_conns=many",
	}
	for _, url := range tests {
		_, err := Parse(url)
		if err == nil {
			t.Errorf("Parse(%q) = nil, want an error", url)
			continue
		}
		if got := err.Error(); strings.Contains(got, "hunter2") {
			t.Errorf("Parse error %q shows the password", got)
		}
	}
}
