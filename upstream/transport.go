package upstream

import (
	"net"
	"net/http"
	"time"
)

// NewTransport returns the *http.Transport the client uses when
// ClientConfig.Transport is nil, tuned for many concurrent calls to one
// host:
//
//   - MaxIdleConnsPerHost 128 (net/http's default of 2 would close and
//     reopen connections under any real concurrency),
//   - IdleConnTimeout 90 s, TLSHandshakeTimeout 5 s, dial timeout 2 s with
//     30 s keep-alive, ExpectContinueTimeout 1 s,
//   - ForceAttemptHTTP2, so an https PMS is spoken to over HTTP/2,
//   - no proxy from the environment: the PMS is internal.
//
// No ResponseHeaderTimeout: every attempt is bounded as a whole by
// ClientConfig.AttemptTimeout.
func NewTransport() *http.Transport {
	d := &net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   128,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// roundTripOnly hides every method of a RoundTripper but RoundTrip.
// go-retryablehttp calls HTTPClient.CloseIdleConnections after every failed
// call, which would drop the whole shared pool on each 404 or cancelled
// call; through this wrapper that call does nothing.
// Client.CloseIdleConnections closes idle connections on purpose.
type roundTripOnly struct{ rt http.RoundTripper }

func (r roundTripOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	return r.rt.RoundTrip(req)
}
