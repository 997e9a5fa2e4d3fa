package upstream

import (
	"errors"
	"net"
	"net/http"
	"syscall"
)

// Refusal is a failure that is the PMS refusing the edge as a whole, which
// only the operator's settings can mend (docs/contract.md section 22): a
// class, never what the PMS sent.
type Refusal string

const (
	// RefusedCredentials: the PMS answered 401 or 403 (PMS_TOKEN).
	RefusedCredentials Refusal = "credentials_refused"
	// Unreachable: no connection to the PMS at all: the name does not
	// resolve, the connection is refused or cannot be made in time, or the
	// PMS's TLS certificate is not trusted (PMS_BASE_URL).
	Unreachable Refusal = "unreachable"
)

// RefusalOf says whether err, the failure of a call or walk, is the PMS
// refusing the edge: the class and a detail ("http_401", "http_403";
// "dns", "connection_refused", "dial_timeout", "dial", "tls_untrusted"),
// or "" for any other failure.
func RefusalOf(err error) (Refusal, string) {
	var se *statusError
	if errors.As(err, &se) {
		switch se.status {
		case http.StatusUnauthorized:
			return RefusedCredentials, "http_401"
		case http.StatusForbidden:
			return RefusedCredentials, "http_403"
		}
		return "", ""
	}
	var te *transportError
	if !errors.As(err, &te) {
		return "", ""
	}
	var (
		dns *net.DNSError
		op  *net.OpError
	)
	switch {
	case isCertError(te.err):
		return Unreachable, "tls_untrusted"
	case errors.As(te.err, &dns):
		return Unreachable, "dns"
	case errors.As(te.err, &op) && op.Op == "dial":
		switch {
		case errors.Is(op, syscall.ECONNREFUSED):
			return Unreachable, "connection_refused"
		case op.Timeout():
			return Unreachable, "dial_timeout"
		}
		return Unreachable, "dial"
	}
	return "", ""
}
