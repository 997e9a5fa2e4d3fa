package pms

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/partner-edge/partner-edge/upstream"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"
)

// Client calls one PMS (docs/pms-api.md) with the resilience of docs/resilience.md.
// Errors are *Error: NotFound from GetHotel on a PMS 404; BadGateway,
// Timeout or Unavailable when the PMS fails or sheds load; Canceled when
// the caller left. Each call runs through, outermost first:
//
//  1. its deadline: a get's CallTimeout, a walk's WalkTimeout (a walk is
//     a background load with a budget of its own, docs/contract.md
//     section 24), or the caller's if earlier: it bounds everything below,
//     retry waits included;
//  2. the circuit breaker, around each HTTP request with its retries (a
//     get, or one page of a walk): while open, the request fails at once
//     with no PMS traffic and no retries, and a walk ends with it; one
//     request, whatever its retries, is one outcome for the breaker;
//  3. retries (per HTTP request, retry.go): one go-retryablehttp client,
//     one retry decision per attempt, with backoff, Retry-After and the
//     shared retry budget;
//  4. the boundary (transport.go): one attempt, bounded by AttemptTimeout
//     and MaxBodyBytes, its connection known, net/http's errors made
//     classes (failure.go), over net/http's Transport and the idle guard
//     (idleguard.go).
//
// An answer that ends something (a walk's last page, a 404, a get's
// record that is not the one asked...) and came on a reused HTTP/1
// connection is asked again on a new connection before it is believed
// (confirm.go): a late stray answer never becomes partner data.
//
// With ClientConfig.Tracer, each logical call has one span (SpanListHotels
// or SpanGetHotel) around all of this, and each attempt's request context
// carries it, so a tracing WrapTransport makes the attempt spans its
// children. With ClientConfig.Metrics, every attempt, retry and breaker
// change is recorded.
//
// PMS shedding (docs/contract.md section 10): a 503 or 429 whose Retry-After the call
// cannot wait out fails the call as Unavailable with that Retry-After
// (clamped to 1..60 s), and no call is made to this PMS before it has
// passed.
//
// A Client is safe for concurrent use. It starts no goroutines of its own;
// the transport's connection goroutines end with CloseIdleConnections or
// the idle timeout.
type Client struct {
	cfg     ClientConfig // defaults applied (withDefaults)
	base    string       // base URL without trailing slash
	http    *http.Client
	retry   *retryablehttp.Client // the one retry loop (retry.go), over http
	breaker *breaker
	// Header values sent on every request, built once (setHeaders).
	userAgent, authorization []string
	// exchanges holds *exchange, the state of one request and its
	// attempts (retry.go), reused from request to request.
	exchanges sync.Pool
	// refusals counts refused get answers for their log lines; idReaders
	// holds *idReader, which check a get's record (confirm.go).
	refusals  refusals
	idReaders sync.Pool
	// notFound paces the error line of a list route answering 404 (walk.go).
	notFound refusals
	// heldUntil (unix nanoseconds of now) is when the PMS may be called
	// again after it shed load; zero or past: not held.
	heldUntil atomic.Int64
	// pace spaces list pages (ReadBytesPerSecond); nil: not paced.
	pace *rate.Limiter
	// spans: ClientConfig.Tracer was set. Without it a call starts no span
	// at all, not even a no-op one (a context per call).
	spans bool
}

// NewClient returns a client for cfg, or an error naming a bad setting.
func NewClient(cfg ClientConfig) (*Client, error) {
	spans := cfg.Tracer != nil
	cfg, u, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	var onStray func()
	if m := cfg.Metrics; m != nil {
		onStray = func() { m.Refused(context.Background(), upstream.RefusedIdleBytes) }
	}
	var send http.RoundTripper = newBoundary(cfg, u.Scheme, onStray)
	if cfg.WrapTransport != nil {
		if send = cfg.WrapTransport(send); send == nil {
			return nil, errors.New("upstream: WrapTransport returned nil")
		}
	}
	c := &Client{
		cfg:  cfg,
		base: strings.TrimRight(u.String(), "/"),
		http: &http.Client{
			// AttemptTimeout is the boundary's: no Timeout here.
			Transport: send,
			// The PMS does not redirect; following one could carry the
			// token elsewhere. A 3xx is an unexpected status.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		spans:     spans,
		userAgent: []string{"partner-edge/" + cfg.Version},
	}
	c.retry = c.newRetryClient()
	if cfg.Token != "" {
		c.authorization = []string{"Bearer " + cfg.Token}
	}
	if cfg.ReadBytesPerSecond > 0 {
		// Burst: one page of the largest size, so a page never waits for
		// more than the rate allows and WaitN never refuses one.
		c.pace = rate.NewLimiter(rate.Limit(cfg.ReadBytesPerSecond), int(cfg.MaxBodyBytes)+1)
	}
	c.breaker = newBreaker("pms "+u.Host, cfg.Breaker, cfg.Logger, cfg.Metrics, cfg.Now)
	return c, nil
}

// BreakerState is the circuit breaker's state: "closed", "half-open" or
// "open".
func (c *Client) BreakerState() string { return c.breaker.State() }

// CloseIdleConnections closes the idle connections of ClientConfig.Transport
// (not of the WrapTransport wrapper, which need not forward the call), if
// it has a CloseIdleConnections method. (Confirmations keep no connection
// alive: confirm.go.)
func (c *Client) CloseIdleConnections() {
	if ci, ok := c.cfg.Transport.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// setHeaders sets the headers of a PMS request. h is a fresh header of
// retryablehttp's request: the names are set in canonical form without
// Set's canonicalisation, and the constant values are shared, built once
// by NewClient (net/http only reads them).
func (c *Client) setHeaders(ctx context.Context, h http.Header) {
	h["Accept"] = acceptJSON
	h["User-Agent"] = c.userAgent
	if c.authorization != nil {
		h["Authorization"] = c.authorization
	}
	ids := upstream.CallerIDsFrom(ctx)
	if ids.RequestID != "" {
		h["X-Request-Id"] = []string{ids.RequestID}
	}
	if ids.CorrelationID != "" {
		h["X-Correlation-Id"] = []string{ids.CorrelationID}
	}
}

var acceptJSON = []string{"application/json"}

// call runs fn as one get: under the call deadline and through the
// breaker, unless the PMS shed load and its Retry-After has not passed. It
// classifies the failure for the caller and records it on span, the call's
// span, which ctx carries.
func (c *Client) call(ctx context.Context, span trace.Span, fn func(ctx context.Context) error) error {
	cctx, cancel := withBudget(ctx, c.cfg.CallTimeout)
	defer cancel()
	err := c.guarded(ctx, func() error { return fn(cctx) })
	if err == nil {
		return nil
	}
	e := upstream.Classify(cctx, err, upstream.BadGateway)
	endCall(span, err, e)
	return e
}

// withBudget is ctx under a deadline d from now, unless ctx's own is
// earlier: a cache load or a partner's request already bounds most calls,
// and a context here would only add a layer and its cancellation.
func withBudget(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}

// guarded runs fn, one HTTP request with its retries, through the breaker,
// unless the PMS shed load and its Retry-After has not passed (a
// *heldError, no request made). A failure of fn while ctx, the caller's
// context, was cancelled is not the PMS's and is not counted
// (callerGoneError); a PMS that shed load is held (Client.hold).
func (c *Client) guarded(ctx context.Context, fn func() error) error {
	if wait := c.heldFor(); wait > 0 {
		return &heldError{wait: wait}
	}
	err := c.breaker.execute(func() error {
		err := fn()
		if err != nil && errors.Is(ctx.Err(), context.Canceled) {
			return &callerGoneError{err: err}
		}
		return err
	})
	if se := (*sheddingError)(nil); errors.As(err, &se) {
		c.hold(se.wait)
	}
	return err
}

// hold keeps every call away from the PMS for d from now.
func (c *Client) hold(d time.Duration) {
	until := c.cfg.Now().Add(d).UnixNano()
	for {
		cur := c.heldUntil.Load()
		if cur >= until || c.heldUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// heldFor is how long calls are still held back (0: not held), at least one
// second while held.
func (c *Client) heldFor() time.Duration {
	until := c.heldUntil.Load()
	if until == 0 {
		return 0
	}
	d := time.Duration(until - c.cfg.Now().UnixNano())
	if d <= 0 {
		return 0
	}
	return max(d, time.Second)
}

// hotelsURL is the list address of brand, or of one hotel when id is set.
func (c *Client) hotelsURL(brand, id string) string {
	if id != "" { // one concatenation, one string
		return c.base + "/internal/v2/brands/" + url.PathEscape(brand) + "/hotels/" + url.PathEscape(id)
	}
	return c.base + "/internal/v2/brands/" + url.PathEscape(brand) + "/hotels"
}

// GetHotel returns the record of one hotel. A PMS 404 is NotFound, whatever
// its body: not retried, and not a failure for the breaker. An answer
// that came on a reused connection and is not the record asked (a 404,
// another status, another record, a body the edge cannot use) is asked
// again on a new connection, and the second answer is the one used
// (confirm.go).
func (c *Client) GetHotel(ctx context.Context, brand, id string) (json.RawMessage, error) {
	ctx, span := c.startCall(ctx, upstream.SpanGetHotel, brand, id)
	defer span.End()
	var rec json.RawMessage
	err := c.call(ctx, span, func(ctx context.Context) error {
		u := c.hotelsURL(brand, id)
		body, v, err := c.do(ctx, u, nil, false)
		if why := c.doubtHotel(v, body, err, id); why != "" {
			body2, _, err2 := c.do(ctx, u, nil, true)
			if isAnswer(err2) && !sameAnswer(body, err, body2, err2) {
				v.retire()
				c.refused(ctx, why)
			}
			body, err = body2, err2
		}
		if err != nil {
			if se := (*statusError)(nil); errors.As(err, &se) && se.status == http.StatusNotFound {
				return upstream.ErrNotFound
			}
			return err
		}
		if t := bytes.TrimLeft(body, " \t\r\n"); len(t) == 0 || t[0] != '{' || !json.Valid(body) {
			return &answerError{class: "not_object", reason: "hotel is not a JSON object"}
		}
		rec = body
		return nil
	})
	return rec, err // rec is nil unless the call succeeded
}

// doubtHotel is the reason to confirm a get's answer (confirm.go): one
// that came on a reused HTTP/1 connection and is not the record of id;
// "" for none.
func (c *Client) doubtHotel(v via, body []byte, err error, id string) string {
	switch {
	case !v.reused:
		return ""
	case err != nil:
		return doubtFailure(err)
	case !c.recordIs(body, id):
		return upstream.RefusedOtherRecord
	}
	return ""
}

// isAnswer reports whether err, a request's outcome, is an answer of the
// PMS (a 200, a status, a body), not a failure to get one.
func isAnswer(err error) bool {
	var (
		se *statusError
		ae *answerError
	)
	return err == nil || errors.As(err, &se) || errors.As(err, &ae)
}
