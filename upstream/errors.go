package upstream

import (
	"context"
	"errors"
	"fmt"
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
		p Paused
	)
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &p):
		return &Error{Kind: Unavailable, RetryAfter: p.RetryAfter(), Err: err}
	case errors.Is(err, ErrNotFound):
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

// Paused is a failure after which the PMS is not called for a while (the
// PMS shed load, the edge holds back, the breaker is open): Classify makes
// it Unavailable with RetryAfter as its Retry-After. The PMS client's
// errors (upstream/pms) implement it; this package names none of them.
type Paused interface {
	error
	RetryAfter() time.Duration
}

// ErrNotFound: the PMS answered 404 to a get. Not a failure of the PMS.
var ErrNotFound = errors.New("pms: hotel not found")

// isTimeout reports whether err is a timeout of one attempt (its
// AttemptTimeout deadline, a dial or read timeout).
func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}
