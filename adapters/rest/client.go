package rest

import (
	"bytes"
	"net/netip"

	"github.com/gofiber/fiber/v2"
)

// headerForwardedFor is the header a proxy appends its peer's address to.
const headerForwardedFor = "X-Forwarded-For"

// clientAddress is the address of the client behind the request: the
// socket peer, unless the peer is a trusted proxy (Config.TrustedProxies),
// in which case X-Forwarded-For is read from the right, hop by hop, for as
// long as the hop that reported the next one is itself trusted. The first
// untrusted hop is the client; an entry that does not parse stops the walk
// at the proxy that passed it on. A client can write anything into the
// header, but only entries to the left of the rightmost untrusted hop, which
// are never read.
func (s *Server) clientAddress(c *fiber.Ctx) netip.Addr {
	peer, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	addr := peer.Unmap()
	if len(s.cfg.TrustedProxies) == 0 || !s.trusted(addr) {
		return addr
	}
	hops := c.Request().Header.PeekAll(headerForwardedFor)
	for i := len(hops) - 1; i >= 0; i-- {
		list := hops[i]
		for len(list) > 0 {
			var hop []byte
			if j := bytes.LastIndexByte(list, ','); j >= 0 {
				list, hop = list[:j], list[j+1:]
			} else {
				list, hop = nil, list
			}
			next, ok := parseHop(hop)
			if !ok {
				return addr
			}
			addr = next
			if !s.trusted(addr) {
				return addr
			}
		}
	}
	return addr
}

func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// parseHop reads one X-Forwarded-For entry: an address, optionally with a
// port ("203.0.113.7:4711", "[2001:db8::1]:4711").
func parseHop(b []byte) (netip.Addr, bool) {
	b = bytes.Trim(b, " \t")
	if a, err := netip.ParseAddr(string(b)); err == nil {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(string(b)); err == nil {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}

// clientOf is the client address found for the request (see
// clientAddress); the rate limits, the access log and the audit record use
// it.
func clientOf(c *fiber.Ctx) netip.Addr { return stateOf(c).client }
