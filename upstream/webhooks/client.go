package webhooks

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"time"
)

// Limits of one attempt (docs/webhooks.md, "Delivery").
const (
	// AttemptTimeout bounds a whole attempt, from dialling to the last
	// byte of the answer read: a receiver slower than this has failed it.
	AttemptTimeout = 10 * time.Second
	// MaxAnswerBody is how much of an answer's body is read (and
	// discarded): enough to keep the connection for the next attempt after
	// a short body, never more than this of a receiver's bytes.
	MaxAnswerBody = 64 << 10
	// idleConns is how many idle connections the client keeps, in all and
	// to one host. An endpoint makes one attempt at a time, so it needs
	// one connection (HTTP/1.1; HTTP/2 shares one per host): a walk's
	// events go to every endpoint at once, and with fewer kept than
	// endpoints of one host (net/http's default is 2) each delivery
	// dialled again, the connect and the Guard's check, and a TLS
	// handshake on https (docs/operations.md, "What deliveries cost").
	// So many endpoints delivering at once keep theirs; one kept costs
	// tens of KB, and goes after IdleConnTimeout unused.
	idleConns = 1024
)

// ClientConfig is the HTTP client of deliveries.
type ClientConfig struct {
	// Guard refuses inside addresses on every connection; its zero value
	// refuses them all (no EDGE_WEBHOOK_ALLOW_CIDRS).
	Guard Guard
	// RootCAs verifies receivers' certificates; nil: the system's roots
	// (tests give their own server's).
	RootCAs *x509.CertPool
	// Resolver looks names up for the dialer; nil: net.DefaultResolver.
	// The Guard checks what it answers, whatever it is (tests give one
	// that answers inside addresses).
	Resolver *net.Resolver
}

// NewClient is the client every attempt is made with: its dialer's Control
// is the Guard (the address actually connected, after DNS, on every
// attempt), no proxy from the environment (a proxy would connect for us,
// past the Guard), no redirect followed (a 3xx is the attempt's answer, so
// a failure), TLS 1.2 or later with RootCAs, and AttemptTimeout on the
// whole attempt.
func NewClient(cfg ClientConfig) *http.Client {
	d := &net.Dialer{
		Timeout:   AttemptTimeout,
		KeepAlive: 30 * time.Second,
		Resolver:  cfg.Resolver,
		Control:   cfg.Guard.Control,
	}
	t := &http.Transport{
		Proxy:                  nil,
		DialContext:            d.DialContext,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: cfg.RootCAs},
		TLSHandshakeTimeout:    AttemptTimeout,
		ResponseHeaderTimeout:  AttemptTimeout,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           idleConns,
		MaxIdleConnsPerHost:    idleConns,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &http.Client{
		Transport: t,
		Timeout:   AttemptTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
