package keycloak

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"

	"github.com/Nerzal/gocloak/v13"
	"golang.org/x/oauth2"

	"github.com/agentauth/agentauth/adapters/telemetry"
)

// TestOutcomeOfKindsOfError: the metrics split provider errors into a few
// fixed kinds.
func TestOutcomeOfKindsOfError(t *testing.T) {
	timeout := &net.OpError{Op: "dial", Err: &timeoutErr{}}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"ok", nil, telemetry.IdPOK},
		{"untrusted certificate", &untrustedError{err: errors.New("x509: unknown authority")}, telemetry.IdPTLS},
		{"token endpoint 401", &oauth2.RetrieveError{Response: &http.Response{StatusCode: 401}}, telemetry.IdPRefused},
		{"gocloak 400", &gocloak.APIError{Code: 400}, telemetry.IdPRefused},
		{"gocloak 502", &gocloak.APIError{Code: 502}, telemetry.IdPBadAnswer},
		{"deadline", fmt.Errorf("get: %w", context.DeadlineExceeded), telemetry.IdPTimeout},
		{"dial timeout", timeout, telemetry.IdPTimeout},
		{"connection refused", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, telemetry.IdPUnreachable},
		{"garbage", errors.New("invalid character '<' looking for beginning of value"), telemetry.IdPBadAnswer},
	}
	for _, tt := range tests {
		if got := outcomeOf(tt.err); got != tt.want {
			t.Errorf("%s: outcomeOf = %s, want %s", tt.name, got, tt.want)
		}
	}
}

type timeoutErr struct{}

func (*timeoutErr) Error() string   { return "i/o timeout" }
func (*timeoutErr) Timeout() bool   { return true }
func (*timeoutErr) Temporary() bool { return true }
