// Package centreurl holds the rule for the URL of a central agentauth
// instance (hybrid mode), which both the configuration's validation and the
// hybrid adapter apply: callers' credentials travel there.
package centreurl

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/agentauth/agentauth/domain"
)

// Check accepts an http(s) base URL with a host and no user info,
// query or fragment. Plain http is accepted only to a loopback host, because
// the callers' credentials travel to the centre.
func Check(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %w", raw, domain.ErrInvalidInput)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%q: the scheme must be https (or http to a loopback host): %w", raw, domain.ErrInvalidInput)
	case u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("%q has no host: %w", raw, domain.ErrInvalidInput)
	case u.User != nil:
		return fmt.Errorf("the URL must not carry user info (user:password@): %w", domain.ErrInvalidInput)
	case u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(raw, "?") || strings.HasSuffix(raw, "#"):
		return fmt.Errorf("%q: give the base URL without a query or fragment: %w", raw, domain.ErrInvalidInput)
	case u.Scheme == "http" && !isLoopback(u.Hostname()):
		return fmt.Errorf("%q: plain http would send the callers' credentials unencrypted; use https (http is accepted only to 127.0.0.1, ::1 or localhost): %w", raw, domain.ErrInvalidInput)
	}
	return nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
