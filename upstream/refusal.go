package upstream

import (
	"context"
	"errors"
)

// Refusal is a failure that is the PMS refusing the edge as a whole, which
// only the operator's settings can mend (docs/contract.md section 22): a
// class, never what the PMS sent.
type Refusal string

const (
	// RefusedCredentials: the PMS answered 401 or 403 (PMS_TOKEN).
	RefusedCredentials Refusal = "credentials_refused"
	// Unreachable: no connection to the PMS at all: the name does not
	// resolve, the connection is refused or cannot be made in time, or the
	// PMS's TLS certificate is not trusted (PMS_BASE_URL).
	Unreachable Refusal = "unreachable"
)

// Reasons an answer was refused: the metric label of
// partner_edge_pms_answers_refused_total, a fixed set.
const (
	RefusedWalkEnd     = "walk_end"     // a page ending the walk (nextCursor null)
	RefusedCursorChain = "cursor_chain" // a page with an empty or already seen cursor
	RefusedNotFound    = "not_found"    // a 404
	RefusedStatus      = "status"       // another status the policy does not retry
	RefusedBadAnswer   = "bad_answer"   // a body the edge cannot use
	RefusedOtherRecord = "other_record" // a get answered with a record that is not the one asked
	RefusedIdleBytes   = "idle_bytes"   // bytes on an idle connection (the idle guard)
)

// RefusalReasons lists every reason.
var RefusalReasons = []string{RefusedWalkEnd, RefusedCursorChain, RefusedNotFound, RefusedStatus,
	RefusedBadAnswer, RefusedOtherRecord, RefusedIdleBytes}

// RefusalOf says whether err, the failure of a call or walk, is the PMS
// refusing the edge: the class and a detail ("http_401", "http_403";
// "dns", "connection_refused", "dial_timeout", "dial", "tls_untrusted"),
// or "" for any other failure.
func RefusalOf(err error) (Refusal, string) {
	var r interface{ RefusedBy() (Refusal, string) }
	if errors.As(err, &r) {
		return r.RefusedBy()
	}
	return "", ""
}

// Cause is the class of a failure of a PMS call or walk, for operators
// (/shadow, logs): "connection_refused", "malformed_header", "status_500",
// "bad_json", "timeout", "breaker_open", "walk_over_bound"... never what the
// PMS sent; "" for nil. A failure from outside the PMS client is named by
// its Kind.
func Cause(err error) string {
	if err == nil {
		return ""
	}
	var c interface{ Cause() string }
	if errors.As(err, &c) {
		return c.Cause()
	}
	switch {
	case errors.Is(err, ErrNotFound):
		return "not_found"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return KindOf(err).String()
}
