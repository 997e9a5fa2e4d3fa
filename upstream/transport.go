package upstream

import (
	"context"
	"io"
	"net"
	"net/http"
	"time"
)

// NewTransport returns the *http.Transport the client uses for an https PMS
// when ClientConfig.Transport is nil, tuned for many concurrent calls to one
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
//
// It also bounds each attempt by timeout (ClientConfig.AttemptTimeout),
// reading the body included, the way http.Client.Timeout bounds one on a
// bare *http.Transport: a deadline on the request's context, released
// once the body has been read. http.Client.Timeout itself is not used: on
// any RoundTripper net/http does not know (this one, WrapTransport's) it
// costs a goroutine, a timer and a channel per attempt. A Client's
// request hands the release to its attempts (attemptsFrom), which call it
// when the next attempt starts or the request ends, after the body was
// read or drained; any other request's body releases it when closed.
// A zero timeout sets no deadline: the transport bounds each attempt by
// itself (h1Transport).
type roundTripOnly struct {
	rt      http.RoundTripper
	timeout time.Duration
}

func (r roundTripOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if r.timeout == 0 {
		return r.rt.RoundTrip(req)
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) <= r.timeout {
		return r.rt.RoundTrip(req) // the call's deadline comes first
	}
	actx, cancel := context.WithTimeout(ctx, r.timeout)
	resp, err := r.rt.RoundTrip(req.WithContext(actx))
	if err != nil {
		cancel()
		return nil, err
	}
	if a := attemptsFrom(ctx); a != nil {
		a.release = cancel // on the caller's goroutine: retryablehttp's Do
	} else {
		resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	}
	return resp, nil
}

// cancelOnClose releases an attempt's deadline when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
