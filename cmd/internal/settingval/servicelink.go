package settingval

import (
	"net/netip"
	"regexp"
	"strconv"
	"strings"
)

// serviceLinkName matches the names of the variables Kubernetes gives every
// pod for each Service of its namespace (unless the pod sets
// enableServiceLinks: false): NAME is the Service's name upper-cased with
// '-' made '_', PORTNAME a port's name likewise, n a port number.
//
//	NAME_SERVICE_HOST, NAME_SERVICE_PORT, NAME_SERVICE_PORT_PORTNAME,
//	NAME_PORT, NAME_PORT_n_PROTO and its _PROTO, _PORT, _ADDR forms
//
// The submatches are the form (SERVICE_HOST, SERVICE_PORT, SERVICE_PORT_,
// PORT, PORT_n_PROTO) and the suffix of the last form.
var serviceLinkName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*?_(SERVICE_HOST|SERVICE_PORT|SERVICE_PORT_[A-Z0-9_]+|PORT|PORT_[0-9]+_(?:TCP|UDP|SCTP))(_PROTO|_PORT|_ADDR)?$`)

// ServiceLink reports whether the variable name=value is one Kubernetes
// sets for a Service (a service link, docs/operations.md): its name has
// one of the shapes above and its value the shape Kubernetes gives that
// form (an address, a port number, proto://address:port, a protocol).
// The value is checked too so that a mistyped setting of that shape
// (EDGE_ADMIN_PORT=9090, meant as EDGE_ADMIN_ADDR) is not taken for one.
func ServiceLink(name, value string) bool {
	m := serviceLinkName.FindStringSubmatch(name)
	if m == nil {
		return false
	}
	form, suffix := m[1], m[2]
	switch {
	case form == "SERVICE_HOST":
		return isAddr(value)
	case strings.HasPrefix(form, "SERVICE_PORT"):
		return suffix == "" && isPort(value)
	case form == "PORT":
		return suffix == "" && isProtoURL(value)
	}
	// NAME_PORT_n_PROTO[_PROTO|_PORT|_ADDR]: n is the port of each.
	n := strings.Split(form, "_")[1]
	proto := strings.ToLower(form[strings.LastIndexByte(form, '_')+1:])
	switch suffix {
	case "":
		return isProtoURL(value) && strings.HasPrefix(value, proto+"://") && strings.HasSuffix(value, ":"+n)
	case "_PROTO":
		return value == proto
	case "_PORT":
		return value == n
	default: // _ADDR
		return isAddr(value)
	}
}

// isAddr: an IP address (a Service's cluster IP).
func isAddr(v string) bool {
	_, err := netip.ParseAddr(v)
	return err == nil
}

// isPort: a port number.
func isPort(v string) bool {
	n, err := strconv.Atoi(v)
	return err == nil && n > 0 && n <= 65535 && strconv.Itoa(n) == v
}

// isProtoURL: tcp://, udp:// or sctp:// then address:port.
func isProtoURL(v string) bool {
	proto, hostPort, ok := strings.Cut(v, "://")
	if !ok || proto != "tcp" && proto != "udp" && proto != "sctp" {
		return false
	}
	ap, err := netip.ParseAddrPort(hostPort)
	return err == nil && ap.Port() != 0
}
