// Package clientaddr resolves a request's client address: the TCP peer, or,
// behind trusted proxies, the right-most X-Forwarded-For address that is not
// itself a trusted proxy (docs/contract.md sections 10 and 15), and the
// failed-auth throttle's bucket of an address.
package clientaddr

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/partner-edge/partner-edge/edge/ratelimit"
)

// ParseTrusted reads EDGE_TRUSTED_PROXIES: comma-separated CIDRs (a
// bare address is a single host). Empty means none. The error names the
// entry that is not a CIDR.
func ParseTrusted(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		p, err := netip.ParsePrefix(entry)
		if err != nil {
			a, aerr := netip.ParseAddr(entry)
			if aerr != nil {
				return nil, fmt.Errorf("%q is not a CIDR such as 10.0.0.0/8 or 2001:db8::/32", entry)
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), max(p.Bits()-96, 0))
		}
		minBits := 16 // the shortest prefix taken: /16 for IPv6, /8 for IPv4 (docs/contract.md section 15)
		if p.Addr().Is4() {
			minBits = 8
		}
		if p.Bits() < minBits {
			return nil, fmt.Errorf("%q is wider than /%d: a trusted range that large lets anyone forge X-Forwarded-For (docs/contract.md section 15)", entry, minBits)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// Addr is the resolved client address of a request: the TCP peer, or,
// when the peer is a trusted proxy, the right-most X-Forwarded-For address
// that is not itself a trusted proxy.
type Addr struct {
	ip netip.Addr
	// text is ip's text, or the peer as given when it is not an IP address
	// (tests, pipes). Made once: the access log, the server span and the
	// failed-auth bucket of every request read it.
	text string
}

func (c Addr) String() string { return c.text }

// maxForwardedHops bounds how many X-Forwarded-For entries are looked at:
// more proxies than this in a row is not a real deployment.
const maxForwardedHops = 16

// Resolve is r's client address, with trusted the proxies whose
// X-Forwarded-For is believed.
func Resolve(r *http.Request, trusted []netip.Prefix) Addr {
	peer := parseAddr(r.RemoteAddr)
	if !peer.IsValid() {
		return Addr{text: r.RemoteAddr[:min(len(r.RemoteAddr), 64)]} // clipped
	}
	if !isTrusted(peer, trusted) {
		return addr(peer, r.RemoteAddr)
	}
	// Walk X-Forwarded-For from the right (the entry our proxy appended)
	// past trusted proxies; left of the first untrusted address is what
	// the client itself wrote.
	client, clientText, hops := peer, r.RemoteAddr, 0
	xff := r.Header["X-Forwarded-For"]
	for i := len(xff) - 1; i >= 0; i-- {
		v := xff[i]
		for v != "" {
			if hops++; hops > maxForwardedHops {
				return addr(client, clientText)
			}
			entry := v
			if j := strings.LastIndexByte(v, ','); j >= 0 {
				entry, v = v[j+1:], v[:j]
			} else {
				v = ""
			}
			entry = strings.TrimSpace(entry)
			a := parseAddr(entry)
			if !a.IsValid() {
				return addr(client, clientText) // garbage: keep the last address vouched for
			}
			client, clientText = a, entry
			if !isTrusted(a, trusted) {
				return addr(a, entry)
			}
		}
	}
	return addr(client, clientText)
}

// addr is the Addr of ip, read from given ("ip", "ip:port" or
// "[ipv6]:port"): its text is given's host when that is already ip's
// canonical text (an IPv4 peer, as net/http gives it), with no allocation.
func addr(ip netip.Addr, given string) Addr {
	host := given
	if j := strings.LastIndexByte(given, ':'); j >= 0 && ip.Is4() && strings.IndexByte(given, ':') == j {
		host = given[:j] // "ip:port"
	}
	var buf [64]byte
	if b := ip.AppendTo(buf[:0]); string(b) != host {
		return Addr{ip: ip, text: string(b)}
	}
	return Addr{ip: ip, text: host}
}

// parseAddr reads "ip", "ip:port" or "[ipv6]:port"; IPv4-mapped IPv6 is
// unmapped. The zero Addr when it is none of these.
// Only a string shaped like an address and port is tried with a port: a
// failed parse allocates its error, and an X-Forwarded-For entry is
// usually a bare address.
func parseAddr(s string) netip.Addr {
	if strings.Contains(s, "]:") || !strings.HasPrefix(s, "[") && strings.Count(s, ":") == 1 {
		if ap, err := netip.ParseAddrPort(s); err == nil {
			return ap.Addr().Unmap().WithZone("")
		}
	}
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")); err == nil {
		return a.Unmap().WithZone("")
	}
	return netip.Addr{}
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ThrottleKey names the failed-auth bucket of an address: an IPv4 address,
// or the /64 of an IPv6 one (one host usually holds a whole /64). It runs
// on every authenticated request: no allocation but for an IPv6 address.
func (c Addr) ThrottleKey() ratelimit.Key {
	if !c.ip.IsValid() || !c.ip.Is6() {
		return ratelimit.Key{Kind: ratelimit.Address, ID: c.text}
	}
	var buf [64]byte
	p, _ := c.ip.Prefix(64)
	return ratelimit.Key{Kind: ratelimit.Address, ID: string(p.AppendTo(buf[:0]))}
}
