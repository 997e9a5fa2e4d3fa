package settingval

import "testing"

// The variables Kubernetes sets for a Service named pms (port http 80/TCP)
// or edge-admin (IPv6, ports 443/TCP and 53/UDP) are service links; names
// of another shape, and names of that shape with values Kubernetes never
// gives, are not.
func TestServiceLink(t *testing.T) {
	for _, c := range []struct {
		name, value string
		want        bool
	}{
		{"PMS_SERVICE_HOST", "10.0.0.1", true},
		{"PMS_SERVICE_PORT", "80", true},
		{"PMS_SERVICE_PORT_HTTP", "80", true},
		{"PMS_SERVICE_PORT_HTTP_ALT", "8080", true},
		{"PMS_PORT", "tcp://10.0.0.1:80", true},
		{"PMS_PORT_80_TCP", "tcp://10.0.0.1:80", true},
		{"PMS_PORT_80_TCP_PROTO", "tcp", true},
		{"PMS_PORT_80_TCP_PORT", "80", true},
		{"PMS_PORT_80_TCP_ADDR", "10.0.0.1", true},
		{"EDGE_ADMIN_SERVICE_HOST", "fd00::1", true},
		{"EDGE_ADMIN_PORT", "tcp://[fd00::1]:443", true},
		{"EDGE_ADMIN_PORT_53_UDP", "udp://[fd00::1]:53", true},
		{"EDGE_ADMIN_PORT_53_UDP_PROTO", "udp", true},
		{"EDGE_ADMIN_PORT_9_SCTP_ADDR", "fd00::1", true},
		{"EDGE_PORT_SERVICE_HOST", "10.0.0.2", true}, // a Service named edge-port

		{"PMS_BASE_URL", "https://pms", false},                // not the shape
		{"EDGE_ADMIN_PORT", "9090", false},                    // a setting mistyped, not a link
		{"PMS_SERVICE_HOST", "pms.internal", false},           // not an address
		{"PMS_SERVICE_PORT", "http", false},                   // not a number
		{"PMS_SERVICE_PORT", "080", false},                    // not as Kubernetes writes it
		{"PMS_PORT", "http://10.0.0.1:80", false},             // not a protocol of a port
		{"PMS_PORT_80_TCP", "tcp://10.0.0.1:81", false},       // another port
		{"PMS_PORT_80_TCP", "udp://10.0.0.1:80", false},       // another protocol
		{"PMS_PORT_80_TCP_PROTO", "TCP", false},               // Kubernetes writes it lower-case
		{"PMS_PORT_80_TCP_PORT", "81", false},                 // another port
		{"PMS_PORT_80_HTTP", "tcp://10.0.0.1:80", false},      // no such protocol
		{"PMS_PORT_80_TCP_HOST", "10.0.0.1", false},           // no such form
		{"PMS_SERVICE_PORT_HTTP_ADDR", "10.0.0.1", false},     // a port name's value is a number
		{"_PORT", "tcp://10.0.0.1:80", false},                 // no name
		{"pms_SERVICE_HOST", "10.0.0.1", false},               // names are upper-case
		{"EDGE_TLS_CERT_SERVICE_HOST", "/etc/tls.crt", false}, // a path
		{"EDGE_SERVICE_PORT", "", false},                      // empty
		{"EDGE_PORT", "tcp://10.0.0.1:0", false},              // no port
		{"EDGE_SERVICE_PORT_HTTPS", "65536", false},           // beyond a port
		{"EDGE_PORT_443_TCP_ADDR", "10.0.0.1:443", false},     // an address, not address:port
	} {
		if got := ServiceLink(c.name, c.value); got != c.want {
			t.Errorf("ServiceLink(%s=%s) = %v, want %v", c.name, c.value, got, c.want)
		}
	}
}
