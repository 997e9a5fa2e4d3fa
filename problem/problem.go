// Package problem is the error vocabulary of the partner API: the registry of
// stable codes (code, status, title) and the one writer of RFC 9457
// application/problem+json bodies.
//
// Every layer reports failures as *Error. Anything else that reaches the
// writer is classified as INTERNAL_ERROR, so no Go error text ever leaks.
package problem

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// FieldError is one field-level problem (docs/partner-api.md section 2.7).
type FieldError struct {
	Field  string `json:"field"`
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

// Error is a failure with a public code. Detail and MoreInfo are sent to the
// partner and must never carry internals; Err is the cause, for logs only.
type Error struct {
	Code     Code
	Detail   string
	MoreInfo string
	Errors   []FieldError
	// Total is how many field problems were found, when the finder kept
	// only some of them in Errors; zero means len(Errors). The writer lists
	// at most MaxErrors and says the total in detail when it lists fewer.
	Total int
	// RetryAfter is sent as Retry-After (whole seconds, rounded up) on 429
	// and 503. Zero sends "1": those statuses always carry the header, and
	// an immediate retry is never what a client should do.
	RetryAfter time.Duration
	// Header holds extra response headers, such as WWW-Authenticate or Allow.
	Header http.Header
	// Err is the underlying cause. It is logged, never written.
	Err error
}

// New returns an *Error with the given code and a formatted detail.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Detail: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string {
	if e == nil { // a typed nil in a chain must not crash a logger
		return "<nil>"
	}
	s := string(e.Code)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// Status is the HTTP status of the error's code.
func (e *Error) Status() int { return Lookup(e.Code).Status }

// writable is pe, or INTERNAL_ERROR when pe is nil or its code is not in
// the registry: bugs of the caller, answered without a panic and without
// inventing a status. Which problem an error is, is the caller's decision
// (package edge turns every error into one in one function); this is only
// the writer's guard.
func writable(pe *Error) *Error {
	if pe != nil && Known(pe.Code) {
		return pe
	}
	cause := errors.New("problem: nil *Error written")
	if pe != nil {
		cause = fmt.Errorf("problem: unknown code %q written: %w", pe.Code, pe)
	}
	return &Error{Code: InternalError, Detail: "An unexpected error occurred. Quote the requestId when contacting support.", Err: cause}
}

// Writer writes problem+json bodies.
type Writer struct {
	// DocsURL is the base of the documentation site; the problem's type is
	// DocsURL + "/errors/" + the code in kebab-case. Empty gives a relative
	// type ("/errors/...").
	DocsURL string
	// Now returns the current time. Nil means time.Now.
	Now func() time.Time
	// AppendTime appends the body's timestamp, taken from Now, to b. The
	// contract's layout (UTC, milliseconds, Z) has one home, mapping's
	// TimeFormat and its encoder mapping.AppendTime, which the edge passes
	// here: problem imports nothing of ours. Nil means RFC 3339 in UTC with
	// as many fractional digits as the time has (time.RFC3339Nano).
	AppendTime func(b []byte, t time.Time) []byte
}

// body fixes the field order and presence of docs/partner-api.md section 2.6.
type body struct {
	Type      string       `json:"type"`
	Title     string       `json:"title"`
	Status    int          `json:"status"`
	Detail    string       `json:"detail"`
	MoreInfo  string       `json:"moreInfo"`
	Instance  string       `json:"instance"`
	Code      Code         `json:"code"`
	Errors    []FieldError `json:"errors"`
	RequestID string       `json:"requestId"`
	Timestamp string       `json:"timestamp"`
}

// TypeURI is the problem type of code under docsURL.
func TypeURI(docsURL string, c Code) string {
	return strings.TrimRight(docsURL, "/") + "/errors/" + strings.ReplaceAll(strings.ToLower(string(c)), "_", "-")
}

// Write answers pe on w and returns the *Error written (pe, or
// INTERNAL_ERROR for a nil pe or an unknown code), so the caller can log
// its code and cause.
func (pw Writer) Write(w http.ResponseWriter, r *http.Request, requestID string, pe *Error) *Error {
	pe = writable(pe)
	entry := Lookup(pe.Code)
	now := time.Now
	if pw.Now != nil {
		now = pw.Now
	}
	detail := pe.Detail
	if detail == "" {
		detail = entry.Title + "."
	}
	detail, errs := bounded(detail, pe.Errors, pe.Total)
	b := body{
		Type:      TypeURI(pw.DocsURL, entry.Code),
		Title:     entry.Title,
		Status:    entry.Status,
		Detail:    detail,
		MoreInfo:  pe.MoreInfo,
		Instance:  Clip(r.URL.EscapedPath(), maxInstance),
		Code:      entry.Code,
		Errors:    errs,
		RequestID: requestID,
		Timestamp: string(pw.appendTime(make([]byte, 0, 32), now())),
	}
	buf, mErr := json.Marshal(b)
	if mErr != nil { // unreachable: every field is a plain string or int
		buf = []byte(`{}`)
	}
	h := w.Header()
	for k, vs := range pe.Header {
		h[k] = vs
	}
	if entry.Status == http.StatusTooManyRequests || entry.Status == http.StatusServiceUnavailable {
		h.Set("Retry-After", strconv.Itoa(RetryAfterSeconds(pe.RetryAfter)))
	}
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(buf)))
	w.WriteHeader(entry.Status)
	_, _ = w.Write(buf)
	return pe
}

func (pw Writer) appendTime(b []byte, t time.Time) []byte {
	if pw.AppendTime != nil {
		return pw.AppendTime(b, t)
	}
	return t.UTC().AppendFormat(b, time.RFC3339Nano)
}

// RetryAfterSeconds rounds d up to whole seconds, at least 1.
func RetryAfterSeconds(d time.Duration) int {
	s := int(math.Ceil(d.Seconds()))
	if s < 1 {
		return 1
	}
	return s
}
