package pms

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/partner-edge/partner-edge/upstream"
)

// Retries (docs/resilience.md, "Retries: what, what not, why"). One HTTP
// request to the PMS (a get, or one list page) is sent by the Client's one
// go-retryablehttp client, as its authors intend it: its loop sends the
// attempts and waits between them; CheckRetry (decide) is the one retry
// decision, made once per attempt with the attempt's answer; Backoff
// (backoff) is the wait, a function of the attempt's number and answer;
// ErrorHandler is the library's PassthroughErrorHandler, so the error
// decide chose is the call's. What belongs to one request (its answer's
// buffer, its retries, the connection of its last attempt) is an
// exchange, carried by the request's context, where decide and the
// boundary transport find it.

// exchange is one HTTP request to the PMS and its attempts: the state the
// retry decision keeps between attempts. Exchanges are pooled (a Client's
// exchanges); every field is used on the request's goroutine only (the
// boundary's PutIdleConn hook, on net/http's, keeps a connection of its
// own).
type exchange struct {
	// into receives a 200's body (a walk's page buffer); nil: scratch,
	// and the body is copied out (a get).
	into *bytes.Buffer
	// fresh sends every attempt on a new connection (boundary.fresh): a
	// confirmation (confirm.go), or the attempts after a 408.
	fresh bool
	// resend is the number of the attempt under way (ResendCount).
	resend  int
	retries int
	// started is when the attempt under way reached the boundary.
	started time.Time
	// release ends the attempt's deadline (the boundary's), once its
	// body has been read or drained. Nil: none held.
	release context.CancelFunc
	// The last attempt's connection (httptrace): which one, whether it
	// carried an answer before, the answer's HTTP major version.
	conn   net.Conn
	reused bool
	proto  int
	// body is the 200's body, once read.
	body []byte
	// shed: the attempt under way got 429/503 with Retry-After.
	shed *sheddingError
	last upstream.PMSOutcome // of the attempt before (a retry's cause)

	scratch bytes.Buffer     // a get's body is read into it, reused
	limited io.LimitedReader // the body's bounded reader, reused
	rbody   boundaryBody     // the boundary's body, reused
}

// exchangeKey is the context key of a request's *exchange.
type exchangeKey struct{}

func exchangeOf(ctx context.Context) *exchange {
	x, _ := ctx.Value(exchangeKey{}).(*exchange)
	return x
}

// newRetryClient is c's one go-retryablehttp client over c.http. It has
// no logger: what it would log (URLs with the PMS's cursors, net/http's
// errors) is the PMS's; decide logs at debug in the edge's words.
func (c *Client) newRetryClient() *retryablehttp.Client {
	return &retryablehttp.Client{
		HTTPClient:   c.http,
		RetryWaitMin: c.cfg.Retry.WaitMin,
		RetryWaitMax: c.cfg.Retry.WaitMax,
		RetryMax:     c.cfg.Retry.MaxRetries, // decide stops first: RetryMax never cuts a retry it chose
		CheckRetry:   c.decide,
		Backoff:      c.backoff,
		ErrorHandler: retryablehttp.PassthroughErrorHandler,
	}
}

// do sends one GET of u with retries and returns the body of its 200, read
// into into (nil: a copy of its own size) and valid until into is used
// again, and how the answer came (its last attempt's connection). fresh
// sends every attempt on a new connection. Errors are *statusError,
// *answerError, *transportError, *sheddingError or a context error.
func (c *Client) do(ctx context.Context, u string, into *bytes.Buffer, fresh bool) ([]byte, via, error) {
	x, _ := c.exchanges.Get().(*exchange)
	if x == nil {
		x = &exchange{}
	}
	defer c.putExchange(x)
	x.into, x.fresh = into, fresh
	req, err := retryablehttp.NewRequestWithContext(context.WithValue(ctx, exchangeKey{}, x), http.MethodGet, u, nil)
	if err != nil {
		return nil, via{}, err
	}
	c.setHeaders(ctx, req.Header)
	c.cfg.Retry.Budget.Request()
	resp, err := c.retry.Do(req)
	x.releaseDeadline()
	if resp != nil {
		resp.Body.Close() // read or drained by decide already
	}
	v := via{conn: x.conn, reused: x.reused && x.proto == 1}
	if err != nil {
		return nil, v, err
	}
	return x.body, v, nil
}

// putExchange resets x and returns it to the pool.
func (c *Client) putExchange(x *exchange) {
	x.releaseDeadline()
	x.into, x.fresh, x.resend, x.retries, x.started = nil, false, 0, 0, time.Time{}
	x.conn, x.reused, x.proto, x.body, x.shed, x.last = nil, false, 0, nil, nil, ""
	x.rbody = boundaryBody{}
	c.exchanges.Put(x)
}

// releaseDeadline ends the deadline of the attempt under way, if one is
// held.
func (x *exchange) releaseDeadline() {
	if x.release != nil {
		x.release()
		x.release = nil
	}
}

// decide is go-retryablehttp's CheckRetry: the one retry decision, made
// once per attempt with its answer (resp) or its failure (err). It reads
// the answer (settle), records the attempt, and says whether to send the
// request again and, when not, with which error the request ends. A retry
// is counted when it is decided, with the outcome of the attempt that
// caused it (a caller that leaves during the wait leaves it counted but
// not sent).
func (c *Client) decide(ctx context.Context, resp *http.Response, err error) (bool, error) {
	x := exchangeOf(ctx)
	fail := c.settle(x, resp, err)
	x.releaseDeadline()
	x.last = attemptOutcome(ctx, resp, fail)
	if m := c.cfg.Metrics; m != nil {
		m.Attempt(ctx, x.last, c.cfg.Now().Sub(x.started))
	}
	if fail != nil {
		c.cfg.Logger.Debug("pms attempt: failed", "attempt", x.resend+1, "outcome", string(x.last), "cause", upstream.Cause(fail))
	}
	if ctx.Err() != nil { // the call's deadline passed, or its caller left
		return false, ctx.Err()
	}
	if fail == nil {
		return false, nil
	}
	if !c.retryable(ctx, x, resp, fail) {
		if x.shed != nil {
			return false, x.shed // the PMS asked for a pause (Client.hold)
		}
		return false, fail
	}
	x.retries++
	x.resend = x.retries
	if m := c.cfg.Metrics; m != nil {
		m.Retry(ctx, x.last) // an event on the call's span, which ctx carries
	}
	if se := (*statusError)(nil); errors.As(fail, &se) && se.status == http.StatusRequestTimeout {
		// The PMS took the connection for idle (docs/resilience.md,
		// Retries): the request goes again on another one, and this one
		// is not used again.
		x.fresh = true
		if x.proto == 1 && x.conn != nil {
			_ = x.conn.Close()
		}
	}
	return true, nil
}

// settle reads the answer of an attempt: a 200's body, bounded by
// MaxBodyBytes, into the exchange; any other answer drained a little (so
// that its connection can be reused) and closed. It returns the attempt's
// failure, nil for a 200 read whole.
func (c *Client) settle(x *exchange, resp *http.Response, err error) error {
	x.shed = nil
	switch {
	case err != nil:
		// http.Client's *url.Error around the boundary's *transportError,
		// or an error of a wrapping transport.
		return classifyTransport(err)
	case resp.StatusCode != http.StatusOK:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return &statusError{status: resp.StatusCode}
	}
	defer resp.Body.Close()
	limit := c.cfg.MaxBodyBytes
	if resp.ContentLength > limit {
		return c.tooLarge()
	}
	// A get reads into scratch and copies once, so a large body costs one
	// allocation of its own size (io.ReadAll would leave about as much
	// again in intermediate chunks: docs/contract.md section 15); a list
	// walk reads each page into its own buffer (do).
	buf := x.into
	if buf == nil {
		buf = &x.scratch
	}
	buf.Reset()
	if resp.ContentLength > 0 {
		// One allocation when the size is told: room for the body and
		// the read that finds its end.
		buf.Grow(int(resp.ContentLength) + bytes.MinRead)
	}
	x.limited = io.LimitedReader{R: resp.Body, N: limit + 1}
	_, err = buf.ReadFrom(&x.limited)
	x.limited = io.LimitedReader{} // a pooled exchange keeps no body
	body := buf.Bytes()
	if x.into == nil {
		body = append([]byte{}, body...)
		if int64(x.scratch.Cap()) > 2*limit+bytes.MinRead { // never keep more than a body's worth
			x.scratch = bytes.Buffer{}
		}
	}
	switch {
	case err != nil:
		return classifyTransport(err)
	case int64(len(body)) > limit:
		return c.tooLarge()
	}
	x.body = body
	return nil
}

// tooLarge is the failure of a body over MaxBodyBytes.
func (c *Client) tooLarge() error {
	return &answerError{class: "too_large", reason: "body larger than " + strconv.FormatInt(c.cfg.MaxBodyBytes, 10) + " bytes"}
}

// retryable is the policy of docs/resilience.md for an attempt that failed
// with fail: whether to send the request again. Each skipped retry is
// logged at debug.
func (c *Client) retryable(ctx context.Context, x *exchange, resp *http.Response, fail error) bool {
	var minWait time.Duration
	switch f := fail.(type) {
	case *statusError:
		if !retryableStatus(f.status) {
			return false
		}
		if f.status == http.StatusTooManyRequests || f.status == http.StatusServiceUnavailable {
			if ra, ok := parseRetryAfter(resp.Header.Get("Retry-After"), c.cfg.Now()); ok {
				// Sent to partners within 1..60 s (docs/contract.md section 10).
				x.shed = &sheddingError{status: f.status, wait: min(max(ra, time.Second), time.Minute)}
				if ra > c.cfg.Retry.RetryAfterMax {
					c.cfg.Logger.Debug("pms retry skipped: Retry-After beyond cap", "retry_after", ra)
					return false
				}
				minWait = ra
			}
		}
	case *answerError:
		return false // the same request would get the same answer
	case *transportError:
		if f.class == classTLSUntrusted || f.class == classCanceled {
			return false
		}
	}
	if x.retries >= c.cfg.Retry.MaxRetries {
		return false
	}
	// The longest wait backoff may choose must end before the deadline: a
	// context's deadline is on time.Now's clock (as in withBudget and the
	// attempt boundary), which an injected Now need not be.
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= max(c.waitCeil(x.retries), minWait) {
		c.cfg.Logger.Debug("pms retry skipped: wait would pass the deadline", "wait", max(c.waitCeil(x.retries), minWait))
		return false
	}
	if !c.cfg.Retry.Budget.TryRetry() {
		c.cfg.Logger.Debug("pms retry skipped: retry budget exhausted")
		return false
	}
	return true
}

// retryableStatus: every 5xx but 501 is transient (docs/pms-api.md section 4),
// 429 is shedding, and a 408 is a PMS closing a connection it took for idle
// while our request crossed it on the wire: RFC 9110 section 15.5.9 lets the
// client repeat the request on a new connection (docs/resilience.md, Retries).
func retryableStatus(s int) bool {
	return s == http.StatusRequestTimeout || s == http.StatusTooManyRequests || s == http.StatusInternalServerError ||
		s == http.StatusBadGateway || s == http.StatusServiceUnavailable || s == http.StatusGatewayTimeout
}

// backoff is go-retryablehttp's Backoff: the wait before retry n+1 (n
// from 0), full jitter in [0, waitCeil(n)], and at least the PMS's
// Retry-After on a 429 or 503 (decide took the retry only if that fits).
func (c *Client) backoff(_, _ time.Duration, n int, resp *http.Response) time.Duration {
	var wait time.Duration
	if ceil := c.waitCeil(n); ceil > 0 {
		wait = rand.N(ceil + 1)
	}
	if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		if ra, ok := parseRetryAfter(resp.Header.Get("Retry-After"), c.cfg.Now()); ok {
			wait = max(wait, ra)
		}
	}
	return wait
}

// waitCeil is the ceiling of the full-jitter wait before retry n+1:
// min(WaitMax, WaitMin x 2^n).
func (c *Client) waitCeil(n int) time.Duration {
	ceil := min(c.cfg.Retry.WaitMin, c.cfg.Retry.WaitMax)
	for range n {
		ceil = min(ceil*2, c.cfg.Retry.WaitMax)
	}
	return ceil
}

// attemptOutcome is how one attempt ended, as a metric label: the status
// the PMS answered, or, for an attempt without an answer, Classify's kind
// of its failure. An unusable 200 answer (answerError) is "ok": the outcome
// describes the HTTP exchange; the call span's problem code (BAD_GATEWAY)
// tells the rest.
func attemptOutcome(ctx context.Context, resp *http.Response, fail error) upstream.PMSOutcome {
	switch f := fail.(type) {
	case nil:
		return upstream.OutcomeOfStatus(resp.StatusCode)
	case *statusError:
		return upstream.OutcomeOfStatus(f.status)
	case *answerError:
		return upstream.PMSOK
	}
	switch upstream.Classify(ctx, fail, upstream.BadGateway).Kind {
	case upstream.Canceled:
		return upstream.PMSCanceled
	case upstream.Timeout:
		return upstream.PMSTimeout
	}
	return upstream.PMSConnection
}

// parseRetryAfter reads a Retry-After value: delay-seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(min(s, 1<<20)) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// ResendCount returns the number of the attempt a request made by the
// Client is: 0 for the first, 1 for the first retry, and so on (the
// http.request.resend_count of OpenTelemetry's HTTP conventions). It is
// meant for a wrapping ClientConfig.Transport, which reads it from
// req.Context() when RoundTrip starts. Outside a Client's request it is 0.
func ResendCount(ctx context.Context) int {
	if x := exchangeOf(ctx); x != nil {
		return x.resend
	}
	return 0
}
