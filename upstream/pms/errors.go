package pms

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// transportError: the PMS could not be reached, or the connection failed
// before the whole answer was read (dial error, reset, EOF mid-body, a
// head net/http cannot read, per-attempt timeout). Retryable, but for an
// untrusted certificate. Made at the boundary (classifyTransport): its
// text is its class and the length of what net/http quoted of the PMS,
// never net/http's text; err is kept for errors.Is and errors.As only.
type transportError struct {
	class  string // failure.go's classes
	quoted int    // bytes of the PMS's net/http quoted (left out)
	err    error
}

func (e *transportError) Error() string {
	if e.quoted > 0 {
		return "pms transport: " + e.class + " (" + strconv.Itoa(e.quoted) + " bytes of the PMS's left out)"
	}
	return "pms transport: " + e.class
}

func (e *transportError) Unwrap() error { return e.err }

// statusError: the PMS answered with an unexpected HTTP status. Its text
// is Go's name of the status, never the PMS's reason phrase.
type statusError struct{ status int }

func (e *statusError) Error() string {
	return fmt.Sprintf("pms answered status %d %s", e.status, http.StatusText(e.status))
}

// answerError: the PMS answered 200 with a body the edge cannot use (not
// JSON, too large, wrong shape, a cursor loop). Not retried: the same
// request would get the same answer. reason is the edge's words; at, when
// set, the byte where the body went wrong; err, the cause, is kept for
// errors.Is (ErrWalkOverBound) but never printed: a decoder's text may
// quote the body.
type answerError struct {
	class  string // bad_json, not_object, no_hotels, too_large, cursor_loop...
	reason string
	at     int64
	err    error
}

func (e *answerError) Error() string {
	if e.at > 0 {
		return "pms answer unusable: " + e.reason + " at byte " + strconv.FormatInt(e.at, 10)
	}
	return "pms answer unusable: " + e.reason
}

func (e *answerError) Unwrap() error { return e.err }

// sheddingError: the PMS answered 503 or 429 with a Retry-After too long
// to wait within the call (docs/contract.md section 10).
type sheddingError struct {
	status int
	wait   time.Duration
}

func (e *sheddingError) Error() string {
	return fmt.Sprintf("pms shed load: status %d, Retry-After %s", e.status, e.wait)
}

func (e *sheddingError) RetryAfter() time.Duration { return e.wait }

// heldError: no call was made, the PMS asked to be left alone for a while
// (Client.hold).
type heldError struct{ wait time.Duration }

func (e *heldError) Error() string { return "pms call held back: the PMS asked to retry later" }

func (e *heldError) RetryAfter() time.Duration { return e.wait }

// breakerOpenError: the circuit breaker refused the call
// (gobreaker.ErrOpenState, or ErrTooManyRequests while half-open).
type breakerOpenError struct {
	err  error
	wait time.Duration // until the breaker lets a probe through
}

func (e *breakerOpenError) Error() string { return e.err.Error() }

func (e *breakerOpenError) Unwrap() error { return e.err }

func (e *breakerOpenError) RetryAfter() time.Duration { return e.wait }

// callerGoneError: the caller's own context was cancelled during the call.
// The breaker excludes it.
type callerGoneError struct{ err error }

func (e *callerGoneError) Error() string { return "pms call abandoned by caller: " + e.err.Error() }

func (e *callerGoneError) Unwrap() error { return e.err }

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

// isTimeout reports whether err is a timeout of one attempt (its
// AttemptTimeout deadline, a dial or read timeout).
func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}
