package upstream

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// attempts is the retry policy of one HTTP request (a get, or one list
// page): go-retryablehttp's hooks, bound to this request's state. Each
// attempts owns a retryablehttp.Client built once with its hooks, and the
// pair is reused from Client's pool call after call (retryablehttp's
// Backoff and ErrorHandler hooks get no context, so the state cannot be
// found per request through one shared client). Do runs every hook on the
// calling goroutine, so the state needs no locks.
//
// The policy (what is retried, what not, the full-jitter wait, Retry-After
// as a minimum and the retry budget): docs/resilience.md, "Retries: what,
// what not, why". A 429 or 503 with Retry-After that is not retried, for
// whatever reason, is a *sheddingError (the PMS asked for a pause; see
// Client).
//
// With ClientConfig.Metrics, each attempt is recorded once (see record):
// its duration and outcome when it ends; a retry is counted when it
// starts, with the outcome of the attempt before it.
type attempts struct {
	c      *Client
	rc     *retryablehttp.Client // built once, with this attempts' hooks
	handle func(*http.Response) error

	resend atomic.Int32 // the attempt under way, for ResendCount
	// release ends the deadline of the attempt before (roundTripOnly),
	// once its body has been read or drained: at the next attempt's
	// start, or when the request ends. Nil: none held.
	release context.CancelFunc
	retries int
	wait    time.Duration
	body    []byte
	scratch bytes.Buffer     // a get's body is read into it, reused from call to call
	limited io.LimitedReader // the body's bounded reader, reused (no allocation per attempt)
	into    *bytes.Buffer    // do's buf: the body is read into it, not copied

	started time.Time // of the attempt under way
	open    bool      // the attempt under way is not yet recorded
	checked bool      // checkRetry has seen the attempt under way once
	shed    error     // *sheddingError: the attempt under way got 429/503 with Retry-After
	last    PMSOutcome
}

// getAttempts takes a reset attempts from the pool, or builds one.
func (c *Client) getAttempts() *attempts {
	if a, ok := c.attemptsPool.Get().(*attempts); ok {
		return a
	}
	a := &attempts{c: c}
	a.handle = a.handleResponse
	a.rc = &retryablehttp.Client{
		HTTPClient:     c.http,
		RetryWaitMin:   c.cfg.Retry.WaitMin,
		RetryWaitMax:   c.cfg.Retry.WaitMax,
		RetryMax:       c.cfg.Retry.MaxRetries,
		CheckRetry:     a.check,
		Backoff:        a.backoff,
		ErrorHandler:   a.giveUp,
		RequestLogHook: a.begin,
	}
	return a
}

// putAttempts resets a and returns it to the pool.
func (c *Client) putAttempts(a *attempts) {
	a.resend.Store(0)
	a.releaseDeadline()
	a.retries, a.wait, a.body, a.into, a.started, a.open, a.checked, a.shed, a.last = 0, 0, nil, nil, time.Time{}, false, false, nil, ""
	c.attemptsPool.Put(a)
}

// do runs one GET of u with retries and returns the body of its 200, read
// into buf (nil: a copy of its own size) and valid until buf is used
// again: a list walk reads every page into one buffer. Errors are
// *statusError, *answerError, *transportError or a context error
// (possibly wrapped).
func (c *Client) do(ctx context.Context, u string, buf *bytes.Buffer) ([]byte, error) {
	a := c.getAttempts()
	defer c.putAttempts(a)
	a.into = buf
	req, err := retryablehttp.NewRequestWithContext(context.WithValue(ctx, attemptKey{}, a), http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	c.setHeaders(ctx, req.Header)
	req.SetResponseHandler(a.handle)
	// retryablehttp logs every request at debug, building its arguments
	// (a redacted copy of the URL) first: give it a logger only when
	// debug is on.
	a.rc.Logger = nil
	if c.cfg.Logger.Enabled(ctx, slog.LevelDebug) {
		a.rc.Logger = c.retryLog
	}
	c.cfg.Retry.Budget.Request()
	_, err = a.rc.Do(req)
	if a.open { // not reached through check; kept as a safety net
		a.record(req.Context(), nil, err)
	}
	if err != nil {
		return nil, err
	}
	return a.body, nil
}

// begin is retryablehttp's RequestLogHook, called before each attempt with
// its number (0 first).
func (a *attempts) begin(_ retryablehttp.Logger, r *http.Request, i int) {
	a.releaseDeadline()
	a.resend.Store(int32(i))
	if i > 0 && a.c.cfg.Metrics != nil {
		a.c.cfg.Metrics.Retry(r.Context(), a.last)
	}
	a.started, a.open, a.checked, a.shed = a.c.cfg.Now(), true, false, nil
}

// releaseDeadline ends the deadline of the attempt before, if one is held.
func (a *attempts) releaseDeadline() {
	if a.release != nil {
		a.release()
		a.release = nil
	}
}

// check is retryablehttp's CheckRetry around checkRetry. retryablehttp
// calls it once per attempt with the attempt's error or response, and,
// when that says "no retry" for a response, once more with the result of
// the response handler (handle): the attempt ends at the last of these.
func (a *attempts) check(ctx context.Context, resp *http.Response, err error) (bool, error) {
	retry, cerr := a.checkRetry(ctx, resp, err)
	if a.open && (retry || err != nil || resp == nil || a.checked) {
		a.record(ctx, resp, err)
	}
	a.checked = true
	return retry, cerr
}

// record ends the attempt under way: its outcome, kept for the retry it may
// cause, and its duration.
func (a *attempts) record(ctx context.Context, resp *http.Response, err error) {
	a.open = false
	a.last = attemptOutcome(ctx, resp, err)
	if a.c.cfg.Metrics != nil {
		a.c.cfg.Metrics.Attempt(ctx, a.last, a.c.cfg.Now().Sub(a.started))
	}
}

// attemptOutcome is how one attempt ended, as a metric label: the status
// the PMS answered, or, for an attempt without an answer, Classify's kind
// of its failure. An unusable 200 answer (answerError) is "ok": the outcome
// describes the HTTP exchange; the call span's problem code (BAD_GATEWAY)
// tells the rest.
func attemptOutcome(ctx context.Context, resp *http.Response, err error) PMSOutcome {
	if err == nil && resp != nil { // the common case, before the targets below escape
		return OutcomeOfStatus(resp.StatusCode)
	}
	var (
		se *statusError
		ae *answerError
	)
	switch {
	case errors.As(err, &se):
		return OutcomeOfStatus(se.status)
	case errors.As(err, &ae):
		return PMSOK
	}
	switch Classify(ctx, err, BadGateway).Kind {
	case Canceled:
		return PMSCanceled
	case Timeout:
		return PMSTimeout
	}
	return PMSConnection
}

// handleResponse reads the answer of an attempt that got a response and
// no retryable status. A failure here goes back through checkRetry.
func (a *attempts) handleResponse(resp *http.Response) error {
	if resp.StatusCode != http.StatusOK {
		return &statusError{status: resp.StatusCode}
	}
	defer resp.Body.Close()
	limit := a.c.cfg.MaxBodyBytes
	if resp.ContentLength > limit {
		return &answerError{reason: "body larger than " + strconv.FormatInt(limit, 10) + " bytes"}
	}
	// A get reads into scratch and copies once, so a large body costs one
	// allocation of its own size (io.ReadAll would leave about as much
	// again in intermediate chunks: docs/contract.md section 15); a list
	// walk reads each page into its own buffer (do).
	buf := a.into
	if buf == nil {
		buf = &a.scratch
	}
	buf.Reset()
	if resp.ContentLength > 0 {
		// One allocation when the size is told: room for the body and
		// the read that finds its end.
		buf.Grow(int(resp.ContentLength) + bytes.MinRead)
	}
	a.limited = io.LimitedReader{R: resp.Body, N: limit + 1}
	_, err := buf.ReadFrom(&a.limited)
	a.limited = io.LimitedReader{} // a pooled attempts keeps no body
	body := buf.Bytes()
	if a.into == nil {
		body = append([]byte{}, body...)
		if int64(a.scratch.Cap()) > 2*limit+bytes.MinRead { // never keep more than a body's worth
			a.scratch = bytes.Buffer{}
		}
	}
	if err != nil {
		return &transportError{err: err}
	}
	if int64(len(body)) > limit {
		return &answerError{reason: "body larger than " + strconv.FormatInt(limit, 10) + " bytes"}
	}
	a.body = body
	return nil
}

// checkRetry is retryablehttp's CheckRetry. It is called after each attempt
// with either the response (err nil) or an error of the attempt or of
// handle.
func (a *attempts) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	var minWait time.Duration
	switch {
	case err != nil:
		if se := (*statusError)(nil); errors.As(err, &se) {
			// Second look at an answer not retried: handle's
			// statusError, or the shedding seen on the first look.
			return false, a.shed
		}
		if ae := (*answerError)(nil); errors.As(err, &ae) || isCertError(err) {
			return false, nil
		}
	case retryableStatus(resp.StatusCode):
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
			if ra, ok := parseRetryAfter(resp.Header.Get("Retry-After"), a.c.cfg.Now()); ok {
				// Sent to partners within 1..60 s (docs/contract.md section 10).
				a.shed = &sheddingError{status: resp.StatusCode, wait: min(max(ra, time.Second), time.Minute)}
				if ra > a.c.cfg.Retry.RetryAfterMax {
					a.c.cfg.Logger.Debug("pms retry skipped: Retry-After beyond cap", "retry_after", ra)
					return false, a.shed
				}
				minWait = ra
			}
		}
	default:
		return false, nil
	}
	if a.retries >= a.c.cfg.Retry.MaxRetries {
		return false, a.shed
	}
	wait := max(a.jitter(), minWait)
	if dl, ok := ctx.Deadline(); ok && !a.c.cfg.Now().Add(wait).Before(dl) {
		a.c.cfg.Logger.Debug("pms retry skipped: wait would pass the deadline", "wait", wait)
		return false, a.shed
	}
	if !a.c.cfg.Retry.Budget.TryRetry() {
		a.c.cfg.Logger.Debug("pms retry skipped: retry budget exhausted")
		return false, a.shed
	}
	a.retries++
	a.wait = wait
	return true, nil
}

// retryableStatus: every 5xx but 501 is transient (docs/pms-api.md section 4),
// 429 is shedding, and a 408 is a PMS closing a connection it took for idle
// while our request crossed it on the wire: RFC 9110 section 15.5.9 lets the
// client repeat the request on a new connection (docs/resilience.md, Retries).
func retryableStatus(s int) bool {
	return s == http.StatusRequestTimeout || s == http.StatusTooManyRequests || s == http.StatusInternalServerError ||
		s == http.StatusBadGateway || s == http.StatusServiceUnavailable || s == http.StatusGatewayTimeout
}

// jitter is the full-jitter wait before retry number a.retries+1.
func (a *attempts) jitter() time.Duration {
	ceil := min(a.c.cfg.Retry.WaitMin, a.c.cfg.Retry.WaitMax)
	for range a.retries {
		ceil = min(ceil*2, a.c.cfg.Retry.WaitMax)
	}
	if ceil <= 0 {
		return 0
	}
	return rand.N(ceil + 1)
}

// backoff is retryablehttp's Backoff: the wait checkRetry chose.
func (a *attempts) backoff(_, _ time.Duration, _ int, _ *http.Response) time.Duration {
	return a.wait
}

// giveUp is retryablehttp's ErrorHandler, called when the last attempt
// failed: it closes the response and returns a typed error.
func (a *attempts) giveUp(resp *http.Response, err error, _ int) (*http.Response, error) {
	if resp != nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
	}
	var (
		se *statusError
		ae *answerError
		te *transportError
		sh *sheddingError
	)
	switch {
	case err == nil && resp != nil:
		return nil, &statusError{status: resp.StatusCode}
	case err == nil:
		err = errors.New("no response")
	case errors.As(err, &se), errors.As(err, &ae), errors.As(err, &te), errors.As(err, &sh):
		return nil, err
	}
	return nil, &transportError{err: err}
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

// retryLogger adapts slog to retryablehttp.LeveledLogger. Everything it says
// is logged at debug: a failed attempt is routine, and the outcome of the
// call is logged by whoever handles it.
type retryLogger struct{ l *slog.Logger }

var _ retryablehttp.LeveledLogger = retryLogger{}

func (r retryLogger) Error(msg string, kv ...any) { r.l.Debug("pms attempt: "+msg, kv...) }
func (r retryLogger) Warn(msg string, kv ...any)  { r.l.Debug("pms attempt: "+msg, kv...) }
func (r retryLogger) Info(msg string, kv ...any)  { r.l.Debug("pms attempt: "+msg, kv...) }
func (r retryLogger) Debug(msg string, kv ...any) { r.l.Debug("pms attempt: "+msg, kv...) }

// attemptKey is the context key of the *attempts a request belongs to
// (do): ResendCount reads its attempt number, roundTripOnly hands it the
// attempt's deadline to release.
type attemptKey struct{}

// ResendCount returns the number of the attempt a request made by the
// Client is: 0 for the first, 1 for the first retry, and so on (the
// http.request.resend_count of OpenTelemetry's HTTP conventions). It is
// meant for a wrapping ClientConfig.Transport, which reads it from
// req.Context() when RoundTrip starts. Outside a Client's request it is 0.
func ResendCount(ctx context.Context) int {
	if a, ok := ctx.Value(attemptKey{}).(*attempts); ok {
		return int(a.resend.Load())
	}
	return 0
}
