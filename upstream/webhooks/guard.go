package webhooks

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"syscall"
)

// ErrAddressRefused is a connection the Guard refused: the address the
// client was about to connect to is one no delivery may reach
// (docs/webhooks.md, "No delivery reaches inside"). The connection is
// never made: the check runs in the dialer's Control, before connect.
var ErrAddressRefused = errors.New("webhooks: address refused")

// refusedPrefixes are the ranges no delivery reaches unless allowed. IPv4
// is checked on the address itself and on the IPv4 address an IPv6 one
// carries (IPv4-mapped ::ffff:0:0/96, NAT64 64:ff9b::/96, 6to4 2002::/16),
// so that no spelling of a private address gets through.
var refusedPrefixes = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{
		// IPv4
		"0.0.0.0/8",       // this network, unspecified
		"10.0.0.0/8",      // private (RFC 1918)
		"100.64.0.0/10",   // shared address space, CGNAT (RFC 6598)
		"127.0.0.0/8",     // loopback
		"169.254.0.0/16",  // link-local, cloud metadata (169.254.169.254)
		"172.16.0.0/12",   // private (RFC 1918)
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // documentation (TEST-NET-1)
		"192.88.99.0/24",  // 6to4 relay anycast
		"192.168.0.0/16",  // private (RFC 1918)
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation (TEST-NET-2)
		"203.0.113.0/24",  // documentation (TEST-NET-3)
		"224.0.0.0/4",     // multicast
		"240.0.0.0/4",     // reserved, broadcast
		// IPv6
		"::/96",          // unspecified, loopback, IPv4-compatible (deprecated)
		"64:ff9b:1::/48", // local-use NAT64
		"100::/64",       // discard-only
		"2001::/23",      // IETF protocol assignments, Teredo (2001::/32)
		"2001:db8::/32",  // documentation
		"3fff::/20",      // documentation (RFC 9637)
		"fc00::/7",       // unique local (RFC 4193)
		"fe80::/10",      // link-local
		"fec0::/10",      // site-local (deprecated)
		"ff00::/8",       // multicast
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()

// Guard decides which addresses a delivery may connect to. Its zero value
// refuses every range of refusedPrefixes and allows any other address.
type Guard struct {
	// Allow lists ranges connected to although refused otherwise
	// (EDGE_WEBHOOK_ALLOW_CIDRS: a test setup's receiver on loopback, the
	// demo); nil allows none. An IPv4 range also allows that address's
	// IPv4-mapped IPv6 form.
	Allow []netip.Prefix
	// AllowHTTP lets deliveries go to http:// URLs
	// (EDGE_WEBHOOK_ALLOW_HTTP); false: https only.
	AllowHTTP bool
}

// ParseAllow reads EDGE_WEBHOOK_ALLOW_CIDRS: CIDRs separated by commas or
// spaces (a bare address is its own /32 or /128; an IPv4-mapped range is
// read as the IPv4 range it maps); an empty string allows nothing. Every
// bad entry is named in the error.
func ParseAllow(s string) ([]netip.Prefix, error) {
	var ps []netip.Prefix
	var errs []error
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		p, err := netip.ParsePrefix(f)
		if err != nil {
			a, aerr := netip.ParseAddr(f)
			if aerr != nil || a.Zone() != "" {
				errs = append(errs, fmt.Errorf("%q is not a CIDR (such as 127.0.0.1/32 or fd00::/8)", f))
				continue
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 { // ::ffff:10.0.0.0/104 is 10.0.0.0/8
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		ps = append(ps, p.Masked())
	}
	return ps, errors.Join(errs...)
}

// Allowed reports whether a delivery may connect to a.
func (g Guard) Allowed(a netip.Addr) bool {
	a = a.WithZone("")
	u := a.Unmap()
	for _, p := range g.Allow {
		if p.Contains(a) || p.Contains(u) {
			return true
		}
	}
	return !refused(u)
}

// refused reports whether a (unmapped) is in a refused range, or carries
// an IPv4 address that is.
func refused(a netip.Addr) bool {
	if !a.IsValid() || a.IsUnspecified() || a.IsLoopback() || a.IsPrivate() || a.IsMulticast() ||
		a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() {
		return true
	}
	for _, p := range refusedPrefixes {
		if p.Contains(a) {
			return true
		}
	}
	if v4, ok := embedded(a); ok {
		return refused(v4)
	}
	return false
}

// embedded is the IPv4 address an IPv6 address of NAT64 (64:ff9b::/96,
// the last 32 bits) or 6to4 (2002::/16, bits 16 to 48) carries.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

func embedded(a netip.Addr) (netip.Addr, bool) {
	b := a.As16()
	switch {
	case !a.Is6():
		return netip.Addr{}, false
	case nat64.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

// Control is the net.Dialer Control of deliveries: it runs after DNS, on
// every address the dialer is about to connect to (each attempt, each
// address of a name), so a name that resolves to an inside address, or
// changes to one between attempts, is refused like a literal one.
func (g Guard) Control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s is no address", ErrAddressRefused, network)
	}
	if !g.Allowed(ap.Addr()) {
		return ErrAddressRefused
	}
	return nil
}
