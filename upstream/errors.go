package upstream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Kind is what went wrong reading the PMS, in the edge's own terms. The
// edge turns each kind into a partner-facing problem (one table, in package
// edge); upstream never speaks the partner's language.
type Kind uint8

// The kinds of Error. The zero value is Internal: an error nobody
// classified is a fault of the edge, never blamed on the PMS.
const (
	// Internal: a fault of the edge itself (a bug, a recovered panic).
	Internal Kind = iota
	// NotFound: the property does not exist for this brand (a PMS 404 on
	// the get route, an unmappable record, an id the snapshot lacks).
	NotFound
	// Unavailable: the PMS must not be called now: the circuit breaker is
	// open, or the PMS shed load with Retry-After. Error.RetryAfter says
	// for how long.
	Unavailable
	// Timeout: the PMS did not answer within the call's deadline.
	Timeout
	// BadGateway: the PMS failed or answered something unusable.
	BadGateway
	// Canceled: the caller went away before the answer.
	Canceled
)

var kindNames = [...]string{"internal", "not_found", "unavailable", "timeout", "bad_gateway", "canceled"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Error is the error of every Catalog and PMS method. Err is the cause, for
// logs only: its text may name hosts and Go errors, so it never reaches a
// partner.
type Error struct {
	Kind Kind
	// RetryAfter, for Unavailable, is how long until the PMS may be called
	// again (at least one second).
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return "upstream: " + e.Kind.String()
	}
	return "upstream: " + e.Kind.String() + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf is the kind of err: that of the *Error in its chain, else
// Internal.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}

// Classify is the one classifier of PMS failures: every failed call, every
// attempt's outcome (attemptOutcome) and every error the edge answers
// (edge's problemOf) goes through it. err failed a call made under ctx:
//   - an *Error in err's chain is returned as is;
//   - the PMS asked for a pause (a 429 or 503 with a long Retry-After, or
//     calls held back since), or the circuit breaker refused the call:
//     Unavailable, with the wait;
//   - the PMS answered 404 to a get: NotFound;
//   - ctx cancelled (the caller left, or the process is stopping):
//     Canceled;
//   - ctx's deadline passed, or err is a timeout: Timeout;
//   - anything else: otherwise.
func Classify(ctx context.Context, err error, otherwise Kind) *Error {
	var (
		e *Error
		p pause
	)
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &p):
		return &Error{Kind: Unavailable, RetryAfter: p.retryAfter(), Err: err}
	case errors.Is(err, errNotFound):
		return &Error{Kind: NotFound, Err: err}
	}
	if err == nil {
		err = ctx.Err()
	}
	switch cerr := ctx.Err(); {
	case errors.Is(cerr, context.Canceled):
		return &Error{Kind: Canceled, Err: err}
	case cerr != nil, errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		return &Error{Kind: Timeout, Err: err}
	case errors.Is(err, context.Canceled):
		return &Error{Kind: Canceled, Err: err}
	}
	return &Error{Kind: otherwise, Err: err}
}

// The typed errors below tell apart why one PMS call failed (Caddy's
// reverseproxy style): the connection failed before a full answer
// (transportError), the PMS answered with a status the edge does not accept
// (statusError), or it answered 200 with something the edge cannot use
// (answerError). They are the causes (Error.Err) of BadGateway errors.

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

// pause is a failure after which the PMS is not called for a while:
// sheddingError, heldError, breakerOpenError. Classify makes each
// Unavailable, with retryAfter as its Retry-After.
type pause interface{ retryAfter() time.Duration }

func (e *sheddingError) retryAfter() time.Duration { return e.wait }

// heldError: no call was made, the PMS asked to be left alone for a while
// (Client.hold).
type heldError struct{ wait time.Duration }

func (e *heldError) Error() string             { return "pms call held back: the PMS asked to retry later" }
func (e *heldError) retryAfter() time.Duration { return e.wait }

// breakerOpenError: the circuit breaker refused the call
// (gobreaker.ErrOpenState, or ErrTooManyRequests while half-open).
type breakerOpenError struct {
	err  error
	wait time.Duration // until the breaker lets a probe through
}

func (e *breakerOpenError) Error() string             { return e.err.Error() }
func (e *breakerOpenError) Unwrap() error             { return e.err }
func (e *breakerOpenError) retryAfter() time.Duration { return e.wait }

// errNotFound: the PMS answered 404 to a get. Not a failure of the PMS.
var errNotFound error = &notFoundError{}

type notFoundError struct{}

func (*notFoundError) Error() string { return "pms: hotel not found" }

// callerGoneError: the caller's own context was cancelled during the call.
// The breaker excludes it.
type callerGoneError struct{ err error }

func (e *callerGoneError) Error() string { return "pms call abandoned by caller: " + e.err.Error() }
func (e *callerGoneError) Unwrap() error { return e.err }

// isTimeout reports whether err is a timeout of one attempt (its
// AttemptTimeout deadline, a dial or read timeout).
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
