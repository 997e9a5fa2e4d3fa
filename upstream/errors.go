package upstream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/partner-edge/partner-edge/problem"
	"github.com/sony/gobreaker/v2"
)

// The typed errors below tell apart why one PMS call failed (Caddy's
// reverseproxy style): the connection failed before a full answer
// (transportError), the PMS answered with a status the edge does not accept
// (statusError), or it answered 200 with something the edge cannot use
// (answerError). They live in problem.Error.Err, for logs only: their text
// names hosts and Go errors, so it never reaches a partner.

// transportError: the PMS could not be reached, or the connection failed
// before the whole answer was read (dial error, reset, EOF mid-body,
// per-attempt timeout). Retryable.
type transportError struct{ err error }

func (e *transportError) Error() string { return "pms transport: " + e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// statusError: the PMS answered with an unexpected HTTP status.
type statusError struct{ status int }

func (e *statusError) Error() string {
	return fmt.Sprintf("pms answered status %d %s", e.status, http.StatusText(e.status))
}

// answerError: the PMS answered 200 with a body the edge cannot use (not
// JSON, too large, wrong shape, a cursor loop). Not retried: the same
// request would get the same answer.
type answerError struct {
	reason string
	err    error
}

func (e *answerError) Error() string {
	if e.err == nil {
		return "pms answer unusable: " + e.reason
	}
	return "pms answer unusable: " + e.reason + ": " + e.err.Error()
}
func (e *answerError) Unwrap() error { return e.err }

// errNotFound: the PMS answered 404 to a get. Not a failure of the PMS.
var errNotFound = errors.New("pms: hotel not found")

// callerGoneError: the caller's own context was cancelled during the call.
// The breaker excludes it; callers get the context's error.
type callerGoneError struct{ err error }

func (e *callerGoneError) Error() string { return "pms call abandoned by caller: " + e.err.Error() }
func (e *callerGoneError) Unwrap() error { return e.err }

// Partner-safe details: no host, path, status of the PMS or Go error text.
const (
	detailBadGateway  = "A system behind the API failed or gave an invalid answer. Retry later and quote the requestId when contacting support."
	detailTimeout     = "A system behind the API did not answer in time. Retry later."
	detailUnavailable = "A system behind the API is temporarily unavailable. Retry after the number of seconds in Retry-After."
	detailNotFound    = "No property with this id is available to the API key."
)

// isTimeout reports whether err is a timeout of one attempt (the
// http.Client's per-attempt timeout, a dial or read timeout).
func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

// isCertError reports a TLS verification failure: retrying cannot help.
func isCertError(err error) bool {
	var (
		cve *tls.CertificateVerificationError
		ua  x509.UnknownAuthorityError
		hn  x509.HostnameError
		ci  x509.CertificateInvalidError
	)
	return errors.As(err, &cve) || errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci)
}

// toProblem classifies the failure of one logical call made under parent.
// The caller's own cancellation returns parent's error as is, so that
// errors.Is(err, context.Canceled) holds; everything else is a
// *problem.Error with a partner-safe detail and the cause in Err.
func (c *Client) toProblem(parent, call context.Context, err error) error {
	if pe := parent.Err(); pe != nil && errors.Is(pe, context.Canceled) {
		return pe
	}
	switch {
	case errors.Is(err, gobreaker.ErrOpenState), errors.Is(err, gobreaker.ErrTooManyRequests):
		return &problem.Error{Code: problem.ServiceUnavailable, Detail: detailUnavailable,
			RetryAfter: c.breaker.retryAfter(), Err: err}
	case errors.Is(err, errNotFound):
		return &problem.Error{Code: problem.PropertyNotFound, Detail: detailNotFound, Err: err}
	case call.Err() != nil, errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		// The overall deadline passed, or the last attempt timed out.
		if err == nil {
			err = call.Err()
		}
		return &problem.Error{Code: problem.GatewayTimeout, Detail: detailTimeout, Err: err}
	}
	return &problem.Error{Code: problem.BadGateway, Detail: detailBadGateway, Err: err}
}

// retryAfterAtLeast returns d, but never less than one second.
func retryAfterAtLeast(d time.Duration) time.Duration {
	return max(d, time.Second)
}
