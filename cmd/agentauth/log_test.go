package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

// TestLogDurationsHaveUnits: a duration is logged as "2s", not 2 (which
// reads as anything from nanoseconds to hours).
func TestLogDurationsHaveUnits(t *testing.T) {
	var out bytes.Buffer
	log, flush, err := newLogger("info", &out)
	if err != nil {
		t.Fatal(err)
	}
	log.Warn("OIDC discovery failed; retrying", zap.Duration("in", 2*time.Second), zap.Duration("latency", 1500*time.Microsecond))
	flush()
	for _, want := range []string{`"in":"2s"`, `"latency":"1.5ms"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("log line %q lacks %s", out.String(), want)
		}
	}
}
