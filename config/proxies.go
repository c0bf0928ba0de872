package config

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// trustedProxiesSetting names the setting in every message about it.
const trustedProxiesSetting = "server.trustedProxies / SERVICE_TRUSTED_PROXIES / --trusted-proxies"

// TrustedProxies parses server.trustedProxies: CIDRs (10.0.0.0/8) or single
// addresses (10.1.2.3, taken as /32 or /128). It reports every entry that
// does not parse, and refuses a range holding every address: trusting the
// whole internet would let any client choose its own address in
// X-Forwarded-For.
func (c Config) TrustedProxies() ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(c.Server.TrustedProxies))
	var bad []error
	for _, s := range c.Server.TrustedProxies {
		s = strings.TrimSpace(s)
		p, err := parseProxy(s)
		switch {
		case err != nil:
			bad = append(bad, fmt.Errorf("%s: %q is not a CIDR such as 10.0.0.0/8 or an IP address such as 10.1.2.3", trustedProxiesSetting, s))
		case p.Bits() == 0:
			bad = append(bad, fmt.Errorf("%s: %q trusts every address, so any client could set its own address in X-Forwarded-For; name the proxies' own range", trustedProxiesSetting, s))
		default:
			out = append(out, p)
		}
	}
	if err := errors.Join(bad...); err != nil {
		return nil, err
	}
	return out, nil
}

func parseProxy(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			// Client addresses are compared unmapped: ::ffff:10.0.0.0/104 is 10.0.0.0/8.
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}
