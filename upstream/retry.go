package upstream

import (
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
// page): go-retryablehttp's hooks, bound to this request's state. A fresh
// retryablehttp.Client is made per request (a small struct sharing the
// client's http.Client), so the hooks can keep per-request state without
// locks; Do runs them all on the calling goroutine.
//
// The policy:
//   - retried: connection failures (dial errors, resets, EOF, also mid-body),
//     per-attempt timeouts, and statuses 429, 500, 502, 503, 504. 500 is
//     retried because pms-internal-api.md section 4 declares every 5xx
//     transient; 501 and other statuses are not.
//   - never retried: other statuses (404 and every other 4xx), a 200 whose
//     body is unusable (answerError: the same request would get the same
//     answer), TLS verification failures, and anything once the call's
//     context is done (the caller left, or the deadline passed).
//   - wait: full jitter, uniform in [0, min(WaitMax, WaitMin*2^n)]; a
//     Retry-After on 429 or 503 is a minimum. A Retry-After above
//     RetryAfterMax, or a wait that would end after the call's deadline,
//     means no retry: the failure is returned at once rather than wasting
//     the partner's time.
//   - budget: each retry takes a token from the shared RetryBudget; none
//     left means no retry.
type attempts struct {
	c       *Client
	resend  atomic.Int32 // the attempt under way, for ResendCount
	retries int
	wait    time.Duration
	body    []byte
}

// do runs one GET of u with retries and returns the body of its 200.
// Errors are *statusError, *answerError, *transportError or a context
// error (possibly wrapped).
func (c *Client) do(ctx context.Context, u string) ([]byte, error) {
	a := &attempts{c: c}
	req, err := retryablehttp.NewRequestWithContext(withResendCounter(ctx, &a.resend), http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	c.setHeaders(ctx, req.Header)
	req.SetResponseHandler(a.handle)
	rc := &retryablehttp.Client{
		HTTPClient:   c.http,
		Logger:       retryLogger{c.log},
		RetryWaitMin: c.cfg.Retry.WaitMin,
		RetryWaitMax: c.cfg.Retry.WaitMax,
		RetryMax:     c.cfg.Retry.MaxRetries,
		CheckRetry:   a.checkRetry,
		Backoff:      a.backoff,
		ErrorHandler: a.giveUp,
		// Called before each attempt with its number (0 first).
		RequestLogHook: func(_ retryablehttp.Logger, _ *http.Request, i int) { a.resend.Store(int32(i)) },
	}
	c.cfg.Retry.Budget.Request()
	if _, err := rc.Do(req); err != nil {
		return nil, err
	}
	return a.body, nil
}

// handle reads the answer of an attempt that got a response and no
// retryable status. A failure here goes back through checkRetry.
func (a *attempts) handle(resp *http.Response) error {
	if resp.StatusCode != http.StatusOK {
		return &statusError{status: resp.StatusCode}
	}
	defer resp.Body.Close()
	limit := a.c.cfg.MaxBodyBytes
	if resp.ContentLength > limit {
		return &answerError{reason: "body larger than " + strconv.FormatInt(limit, 10) + " bytes"}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
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
		var se *statusError
		var ae *answerError
		if errors.As(err, &se) || errors.As(err, &ae) || isCertError(err) {
			return false, nil
		}
	case retryableStatus(resp.StatusCode):
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
			if ra, ok := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
				if ra > a.c.cfg.Retry.RetryAfterMax {
					a.c.log.Debug("pms retry skipped: Retry-After beyond cap", "retry_after", ra)
					return false, nil
				}
				minWait = ra
			}
		}
	default:
		return false, nil
	}
	if a.retries >= a.c.cfg.Retry.MaxRetries {
		return false, nil
	}
	wait := max(a.jitter(), minWait)
	if dl, ok := ctx.Deadline(); ok && !time.Now().Add(wait).Before(dl) {
		a.c.log.Debug("pms retry skipped: wait would pass the deadline", "wait", wait)
		return false, nil
	}
	if !a.c.cfg.Retry.Budget.TryRetry() {
		a.c.log.Debug("pms retry skipped: retry budget exhausted")
		return false, nil
	}
	a.retries++
	a.wait = wait
	return true, nil
}

func retryableStatus(s int) bool {
	switch s {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// jitter is the full-jitter wait before retry number a.retries+1.
func (a *attempts) jitter() time.Duration {
	ceil := a.c.cfg.Retry.WaitMin
	for i := 0; i < a.retries && ceil < a.c.cfg.Retry.WaitMax; i++ {
		ceil *= 2
	}
	ceil = min(ceil, a.c.cfg.Retry.WaitMax)
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
	)
	switch {
	case errors.As(err, &se), errors.As(err, &ae), errors.As(err, &te):
		return nil, err
	case err == nil && resp != nil:
		return nil, &statusError{status: resp.StatusCode}
	case err == nil:
		return nil, &transportError{err: errors.New("no response")}
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
