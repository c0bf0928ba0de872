package rest_test

import (
	"context"
	"net/http"
	"net/netip"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agentauth/agentauth/ports"
)

// TestClientAddressBehindTrustedProxies: X-Forwarded-For names the client
// only when the socket peer (here always 127.0.0.1) is a trusted proxy, and
// then the rightmost hop that is not a trusted proxy is the client; what a
// client writes to the left of it is never believed. The access log line
// carries the address found.
func TestClientAddressBehindTrustedProxies(t *testing.T) {
	loopback := netip.MustParsePrefix("127.0.0.0/8")
	ingress := netip.MustParsePrefix("10.0.0.0/8")
	tests := []struct {
		name    string
		trusted []netip.Prefix
		xff     []string // one header line each
		want    string
	}{
		{"no trusted proxies: the socket address", nil, []string{"203.0.113.9"}, "127.0.0.1"},
		{"peer not trusted: the header is ignored", []netip.Prefix{ingress}, []string{"203.0.113.9"}, "127.0.0.1"},
		{"trusted peer without the header", []netip.Prefix{loopback}, nil, "127.0.0.1"},
		{"trusted peer: its client", []netip.Prefix{loopback}, []string{"203.0.113.9"}, "203.0.113.9"},
		{"rightmost untrusted hop", []netip.Prefix{loopback, ingress}, []string{"198.51.100.1, 203.0.113.9, 10.0.0.5"}, "203.0.113.9"},
		{"a spoofed left part is not believed", []netip.Prefix{loopback}, []string{"10.0.0.1, 203.0.113.9"}, "203.0.113.9"},
		{"every hop trusted: the leftmost", []netip.Prefix{loopback, ingress}, []string{"10.0.0.2,10.0.0.5"}, "10.0.0.2"},
		{"garbage stops at the proxy that passed it", []netip.Prefix{loopback}, []string{"203.0.113.9, not-an-address"}, "127.0.0.1"},
		{"garbage left of the client is not read", []netip.Prefix{loopback}, []string{"not-an-address, 203.0.113.9"}, "203.0.113.9"},
		{"several header lines in order", []netip.Prefix{loopback, ingress}, []string{"198.51.100.1", "10.0.0.5"}, "198.51.100.1"},
		{"IPv6 with a port", []netip.Prefix{loopback}, []string{"[2001:db8::1]:4711"}, "2001:db8::1"},
		{"IPv4 with a port", []netip.Prefix{loopback}, []string{"203.0.113.9:4711"}, "203.0.113.9"},
		{"IPv4-mapped IPv6", []netip.Prefix{loopback}, []string{"::ffff:203.0.113.9"}, "203.0.113.9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.InfoLevel)
			h := start(t, options{trustedProxies: tt.trusted, log: zap.New(core)})
			req, err := http.NewRequest("GET", h.url+"/api/v2/me", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", bearer(keyUser))
			for _, v := range tt.xff {
				req.Header.Add("X-Forwarded-For", v)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			id := res.Header.Get("X-Request-ID")
			var got []string
			for _, e := range logs.FilterMessage("request").AllUntimed() {
				if e.ContextMap()["request_id"] == id {
					got = append(got, e.ContextMap()["client"].(string))
				}
			}
			if len(got) != 1 || got[0] != tt.want {
				t.Errorf("access log client = %q, want [%q]", got, tt.want)
			}
			recs, err := h.store.QueryAudit(context.Background(), ports.AuditQuery{Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			var audited []string
			for _, r := range recs {
				if r.RequestID == id {
					audited = append(audited, r.Client)
				}
			}
			if len(audited) != 1 || audited[0] != tt.want {
				t.Errorf("audit record client = %q, want [%q]", audited, tt.want)
			}
		})
	}
}
