package problem_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/problem"
)

// decisions is the table of docs/contract.md section 7, in its order, written
// out by hand so a typo in a constant or a status is caught.
var decisions = []struct {
	code   string
	status int
}{
	{"MALFORMED_QUERY_STRING", 400},
	{"UNKNOWN_QUERY_PARAMETER", 400},
	{"INVALID_QUERY_PARAMETER", 400},
	{"INVALID_PATH_PARAMETER", 400},
	{"TRAILING_SLASH", 400},
	{"INVALID_PATH_CASING", 400},
	{"MISSING_REQUIRED_HEADER", 400},
	{"INVALID_HEADER", 400},
	{"UNEXPECTED_REQUEST_BODY", 400},
	{"MISSING_AUTH_HEADER", 401},
	{"INVALID_AUTH_HEADER", 401},
	{"INVALID_API_KEY", 401},
	{"API_KEY_EXPIRED", 401},
	{"INVALID_ACCESS_TOKEN", 401},
	{"ACCESS_TOKEN_EXPIRED", 401},
	{"API_KEY_SUSPENDED", 403},
	{"BRAND_ACCESS_DENIED", 403},
	{"INSUFFICIENT_SCOPE", 403},
	{"TEST_MODE_UNAVAILABLE", 403},
	{"PROPERTY_ACCESS_DENIED", 403},
	{"ROUTE_NOT_FOUND", 404},
	{"PROPERTY_NOT_FOUND", 404},
	{"EVENTS_CURSOR_EXPIRED", 410},
	{"LIST_SNAPSHOT_EXPIRED", 410},
	{"MALFORMED_JSON", 400},
	{"UNKNOWN_BODY_FIELD", 400},
	{"WEBHOOK_ENDPOINT_NOT_FOUND", 404},
	{"WEBHOOK_ENDPOINT_EXISTS", 409},
	{"WEBHOOK_ENDPOINT_LIMIT", 409},
	{"PAYLOAD_TOO_LARGE", 413},
	{"UNSUPPORTED_MEDIA_TYPE", 415},
	{"METHOD_NOT_ALLOWED", 405},
	{"NOT_ACCEPTABLE", 406},
	{"VALIDATION_FAILED", 422},
	{"RATE_LIMITED", 429},
	{"INTERNAL_ERROR", 500},
	{"BAD_GATEWAY", 502},
	{"SERVICE_UNAVAILABLE", 503},
	{"GATEWAY_TIMEOUT", 504},
}

func TestRegistryMatchesDecisions(t *testing.T) {
	all := problem.All()
	if len(all) != len(decisions) {
		t.Fatalf("registry has %d entries, docs/contract.md section 7 has %d", len(all), len(decisions))
	}
	seenCode := map[problem.Code]bool{}
	seenTitle := map[string]problem.Code{}
	for i, e := range all {
		d := decisions[i]
		if string(e.Code) != d.code || e.Status != d.status {
			t.Errorf("entry %d = %s %d, want %s %d (order and status of docs/contract.md)", i, e.Code, e.Status, d.code, d.status)
		}
		if seenCode[e.Code] {
			t.Errorf("code %s registered twice", e.Code)
		}
		seenCode[e.Code] = true
		if strings.TrimSpace(e.Title) == "" || strings.TrimSpace(e.Explanation) == "" {
			t.Errorf("%s: empty title or explanation", e.Code)
		}
		if other, dup := seenTitle[e.Title]; dup {
			t.Errorf("%s and %s share the title %q", e.Code, other, e.Title)
		}
		seenTitle[e.Title] = e.Code
		if len(e.Explanation) < 40 || len(e.Explanation) <= len(e.Title) {
			t.Errorf("%s: explanation %q is not a paragraph", e.Code, e.Explanation)
		}
		if !problem.Known(e.Code) || problem.Lookup(e.Code) != e {
			t.Errorf("%s: Known/Lookup disagree with All", e.Code)
		}
	}
	if problem.Known("GUEST_NOT_FOUND") {
		t.Error("GUEST_NOT_FOUND is reserved for a later version, not registered in v1")
	}
}

// TestCodeConstants ties each exported constant to its row.
func TestCodeConstants(t *testing.T) {
	consts := []problem.Code{problem.MalformedQueryString, problem.UnknownQueryParameter,
		problem.InvalidQueryParameter, problem.InvalidPathParameter, problem.TrailingSlash,
		problem.InvalidPathCasing, problem.MissingRequiredHeader, problem.InvalidHeader,
		problem.UnexpectedRequestBody, problem.MissingAuthHeader, problem.InvalidAuthHeader,
		problem.InvalidAPIKey, problem.APIKeyExpired, problem.InvalidAccessToken, problem.AccessTokenExpired,
		problem.APIKeySuspended, problem.BrandAccessDenied,
		problem.InsufficientScope, problem.TestModeUnavailable, problem.PropertyAccessDenied,
		problem.RouteNotFound, problem.PropertyNotFound, problem.EventsCursorExpired, problem.ListSnapshotExpired,
		problem.MalformedJSON, problem.UnknownBodyField, problem.WebhookEndpointNotFound, problem.WebhookEndpointExists,
		problem.WebhookEndpointLimit, problem.PayloadTooLarge, problem.UnsupportedMediaType, problem.MethodNotAllowed, problem.NotAcceptable,
		problem.ValidationFailed, problem.RateLimited, problem.InternalError, problem.BadGateway,
		problem.ServiceUnavailable, problem.GatewayTimeout}
	for i, c := range consts {
		if string(c) != decisions[i].code {
			t.Errorf("constant %d = %s, want %s", i, c, decisions[i].code)
		}
	}
}

func TestLookupUnknown(t *testing.T) {
	internal := problem.Lookup(problem.InternalError)
	if internal.Status != http.StatusInternalServerError {
		t.Fatalf("INTERNAL_ERROR status %d", internal.Status)
	}
	for _, c := range []problem.Code{"", "NOPE", "internal_error", "GUEST_NOT_FOUND", "ROUTE_NOT_FOUND "} {
		if got := problem.Lookup(c); got != internal {
			t.Errorf("Lookup(%q) = %s, want INTERNAL_ERROR", c, got.Code)
		}
		if problem.Known(c) {
			t.Errorf("Known(%q) = true", c)
		}
	}
}

func TestAllReturnsACopy(t *testing.T) {
	a := problem.All()
	a[0].Status, a[0].Title = 599, "changed"
	if b := problem.All(); b[0].Status != 400 || b[0].Title == "changed" {
		t.Errorf("All shares the registry: %+v", b[0])
	}
	if problem.Lookup(problem.MalformedQueryString).Status != 400 {
		t.Error("changing All's result changed Lookup")
	}
}

func TestTypeURI(t *testing.T) {
	tests := []struct {
		docs string
		code problem.Code
		want string
	}{
		{"https://developer.example.com", problem.UnknownQueryParameter, "https://developer.example.com/errors/unknown-query-parameter"},
		{"https://developer.example.com/", problem.UnknownQueryParameter, "https://developer.example.com/errors/unknown-query-parameter"},
		{"https://developer.example.com//", problem.APIKeyExpired, "https://developer.example.com/errors/api-key-expired"},
		{"https://example.com/docs/partner", problem.InternalError, "https://example.com/docs/partner/errors/internal-error"},
		{"https://example.com/docs/partner/", problem.NotAcceptable, "https://example.com/docs/partner/errors/not-acceptable"},
		{"", problem.RateLimited, "/errors/rate-limited"},
	}
	for _, tc := range tests {
		if got := problem.TypeURI(tc.docs, tc.code); got != tc.want {
			t.Errorf("TypeURI(%q, %s) = %q, want %q", tc.docs, tc.code, got, tc.want)
		}
	}
	for _, d := range decisions {
		want := "https://d.example/errors/" + strings.ReplaceAll(strings.ToLower(d.code), "_", "-")
		if got := problem.TypeURI("https://d.example", problem.Code(d.code)); got != want {
			t.Errorf("TypeURI(%s) = %q, want %q", d.code, got, want)
		}
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	for d, want := range map[time.Duration]int{
		0: 1, -time.Second: 1, time.Nanosecond: 1, 999 * time.Millisecond: 1, time.Second: 1,
		time.Second + time.Millisecond: 2, 2500 * time.Millisecond: 3, 30 * time.Second: 30, time.Hour: 3600,
	} {
		if got := problem.RetryAfterSeconds(d); got != want {
			t.Errorf("RetryAfterSeconds(%s) = %d, want %d", d, got, want)
		}
	}
}

// fields is the order of docs/partner-api.md section 2.6.
var fields = []string{"type", "title", "status", "detail", "moreInfo", "instance", "code", "errors", "requestId", "timestamp"}

// topLevelKeys returns the keys of a JSON object in the order written.
func topLevelKeys(t *testing.T, body []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("body %s is not an object: %v", body, err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

type body struct {
	Type      string               `json:"type"`
	Title     string               `json:"title"`
	Status    int                  `json:"status"`
	Detail    string               `json:"detail"`
	MoreInfo  string               `json:"moreInfo"`
	Instance  string               `json:"instance"`
	Code      string               `json:"code"`
	Errors    []problem.FieldError `json:"errors"`
	RequestID string               `json:"requestId"`
	Timestamp string               `json:"timestamp"`
}

// contractTime is the contract's timestamp encoder as the edge injects it
// (mapping.AppendTime; problem imports nothing of ours): UTC, milliseconds, Z.
func contractTime(b []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z")
}

func TestWriter(t *testing.T) {
	now := time.Date(2026, 11, 22, 11, 41, 0, 123987654, time.FixedZone("CET", 3600))
	const wantTimestamp = "2026-11-22T10:41:00.123Z"
	pw := problem.Writer{DocsURL: "https://developer.example.com/", Now: func() time.Time { return now }, AppendTime: contractTime}

	tests := []struct {
		name       string
		err        *problem.Error
		target     string
		wantCode   problem.Code
		wantDetail string // "" skips the check
		wantErrors []problem.FieldError
		retryAfter string // "" means absent
		header     http.Header
		absent     []string // substrings the body must not contain
	}{{
		name:       "field errors",
		err:        &problem.Error{Code: problem.InvalidQueryParameter, Detail: "page must be an integer.", MoreInfo: "See paging.", Errors: []problem.FieldError{{Field: "page", Code: problem.FieldInvalidFormat, Detail: "not an integer"}}},
		target:     "/v1/properties?page=x&secret=1",
		wantCode:   problem.InvalidQueryParameter,
		wantDetail: "page must be an integer.",
		wantErrors: []problem.FieldError{{Field: "page", Code: "INVALID_FORMAT", Detail: "not an integer"}},
		absent:     []string{"secret=1", "?"},
	}, {
		name:       "escaped path kept escaped, query dropped",
		err:        problem.New(problem.InvalidPathParameter, "propertyId must be a UUID."),
		target:     "/v1/properties/caf%C3%A9%2Fx%20y?x=%2F",
		wantCode:   problem.InvalidPathParameter,
		wantDetail: "propertyId must be a UUID.",
	}, {
		name:     "rate limited rounds Retry-After up",
		err:      &problem.Error{Code: problem.RateLimited, RetryAfter: 1500 * time.Millisecond},
		target:   "/v1/properties",
		wantCode: problem.RateLimited, retryAfter: "2",
	}, {
		name:     "service unavailable without a delay says 1",
		err:      &problem.Error{Code: problem.ServiceUnavailable},
		target:   "/v1/properties",
		wantCode: problem.ServiceUnavailable, retryAfter: "1",
	}, {
		name:     "service unavailable with a negative delay says 1",
		err:      &problem.Error{Code: problem.ServiceUnavailable, RetryAfter: -3 * time.Second},
		target:   "/v1/",
		wantCode: problem.ServiceUnavailable, retryAfter: "1",
	}, {
		name:     "service unavailable, whole seconds",
		err:      &problem.Error{Code: problem.ServiceUnavailable, RetryAfter: 7 * time.Second},
		target:   "/v1/",
		wantCode: problem.ServiceUnavailable, retryAfter: "7",
	}, {
		name:     "no Retry-After on 502 even when set",
		err:      &problem.Error{Code: problem.BadGateway, RetryAfter: 5 * time.Second},
		target:   "/v1/properties",
		wantCode: problem.BadGateway,
	}, {
		name:     "no Retry-After on 504",
		err:      &problem.Error{Code: problem.GatewayTimeout, RetryAfter: 5 * time.Second},
		target:   "/v1/properties",
		wantCode: problem.GatewayTimeout,
	}, {
		name:     "Allow from Error.Header",
		err:      &problem.Error{Code: problem.MethodNotAllowed, Header: http.Header{"Allow": {"GET"}}},
		target:   "/v1/properties",
		wantCode: problem.MethodNotAllowed,
		header:   http.Header{"Allow": {"GET"}},
	}, {
		name:     "WWW-Authenticate from Error.Header, several values",
		err:      &problem.Error{Code: problem.InvalidAPIKey, Header: http.Header{"Www-Authenticate": {`Bearer realm="partner-api", error="invalid_token"`, `Bearer`}}},
		target:   "/v1/properties",
		wantCode: problem.InvalidAPIKey,
		header:   http.Header{"Www-Authenticate": {`Bearer realm="partner-api", error="invalid_token"`, `Bearer`}},
	}, {
		name:     "unknown code is INTERNAL_ERROR",
		err:      &problem.Error{Code: "MADE_UP", Detail: "made-up detail"},
		target:   "/v1/",
		wantCode: problem.InternalError,
		absent:   []string{"MADE_UP", "made-up"},
	}, {
		name:     "typed nil *Error is INTERNAL_ERROR",
		err:      (*problem.Error)(nil),
		target:   "/v1/",
		wantCode: problem.InternalError,
	}, {
		name:       "empty detail gets the title",
		err:        &problem.Error{Code: problem.RouteNotFound},
		target:     "/v2/nothing",
		wantCode:   problem.RouteNotFound,
		wantDetail: "Route not found.",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodGet, tc.target, nil)
			got := pw.Write(rec, r, "req_01JDX7R2KQ", tc.err)
			entry := problem.Lookup(tc.wantCode)
			res := rec.Result()
			raw := rec.Body.Bytes()

			if got == nil || got.Code != tc.wantCode {
				t.Fatalf("Write returned %+v, want code %s", got, tc.wantCode)
			}
			if res.StatusCode != entry.Status {
				t.Errorf("status %d, want %d", res.StatusCode, entry.Status)
			}
			if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type %q", ct)
			}
			if cl := res.Header.Get("Content-Length"); cl != fmt.Sprint(len(raw)) {
				t.Errorf("Content-Length %q, body %d bytes", cl, len(raw))
			}
			if ra, has := res.Header["Retry-After"]; (tc.retryAfter == "") == has || (has && (len(ra) != 1 || ra[0] != tc.retryAfter)) {
				t.Errorf("Retry-After %v, want %q", ra, tc.retryAfter)
			}
			for k, vs := range tc.header {
				if !slices.Equal(res.Header.Values(k), vs) {
					t.Errorf("%s = %q, want %q", k, res.Header.Values(k), vs)
				}
			}

			if keys := topLevelKeys(t, raw); !slices.Equal(keys, fields) {
				t.Errorf("fields %v, want %v", keys, fields)
			}
			var b body
			if err := json.Unmarshal(raw, &b); err != nil {
				t.Fatal(err)
			}
			wantType := "https://developer.example.com/errors/" + strings.ReplaceAll(strings.ToLower(string(tc.wantCode)), "_", "-")
			if b.Type != wantType || b.Title != entry.Title || b.Status != entry.Status || b.Code != string(tc.wantCode) {
				t.Errorf("type/title/status/code = %q %q %d %q, want %q %q %d %q", b.Type, b.Title, b.Status, b.Code, wantType, entry.Title, entry.Status, tc.wantCode)
			}
			wantInstance := strings.SplitN(tc.target, "?", 2)[0]
			if b.Instance != wantInstance {
				t.Errorf("instance %q, want %q", b.Instance, wantInstance)
			}
			if b.Detail == "" || (tc.wantDetail != "" && b.Detail != tc.wantDetail) {
				t.Errorf("detail %q, want %q (never empty)", b.Detail, tc.wantDetail)
			}
			if tc.name == "field errors" && b.MoreInfo != "See paging." {
				t.Errorf("moreInfo %q", b.MoreInfo)
			}
			if b.RequestID != "req_01JDX7R2KQ" || b.Timestamp != wantTimestamp {
				t.Errorf("requestId/timestamp = %q %q, want req_01JDX7R2KQ %s", b.RequestID, b.Timestamp, wantTimestamp)
			}
			if tc.wantErrors == nil {
				if !bytes.Contains(raw, []byte(`"errors":[]`)) {
					t.Errorf("errors not [] in %s", raw)
				}
			} else if !slices.Equal(b.Errors, tc.wantErrors) {
				t.Errorf("errors %+v, want %+v", b.Errors, tc.wantErrors)
			}
			for _, s := range tc.absent {
				if bytes.Contains(raw, []byte(s)) {
					t.Errorf("body carries %q: %s", s, raw)
				}
			}
		})
	}
}

// TestWriterDefaultClock: a nil Now means the wall clock, and a nil
// AppendTime writes it in UTC as time.RFC3339Nano.
func TestWriterDefaultClock(t *testing.T) {
	rec := httptest.NewRecorder()
	before := time.Now()
	// Now nil on purpose: its default is what is tested.
	problem.Writer{Now: nil}.Write(rec, httptest.NewRequest(http.MethodGet, "/v1/", nil), "req_x", problem.New(problem.NotAcceptable, "no"))
	after := time.Now()
	var b body
	if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil {
		t.Fatal(err)
	}
	ts, err := time.Parse(time.RFC3339Nano, b.Timestamp)
	if err != nil || !strings.HasSuffix(b.Timestamp, "Z") || b.Timestamp != ts.Format(time.RFC3339Nano) {
		t.Fatalf("timestamp %q: %v", b.Timestamp, err)
	}
	if ts.Before(before) || ts.After(after) {
		t.Errorf("timestamp %s not between %s and %s", ts, before, after)
	}
	if b.Type != "/errors/not-acceptable" {
		t.Errorf("type %q with empty DocsURL", b.Type)
	}
}

func TestNew(t *testing.T) {
	pe := problem.New(problem.PropertyNotFound, "no %s here", "property")
	if pe.Detail != "no property here" {
		t.Errorf("New detail %q", pe.Detail)
	}
	var target *problem.Error
	if !errors.As(fmt.Errorf("load: %w", pe), &target) || target != pe {
		t.Error("errors.As does not find a wrapped *Error")
	}
}

// Which problem an error is, is the edge's decision (edge.problemOf, with
// its own test); Write only guards against its caller's bugs: a nil
// *Error or a code outside the registry answers INTERNAL_ERROR, with no
// panic and nothing of the cause in the body.
func TestWriteGuards(t *testing.T) {
	plain := errors.New("dial tcp 10.0.0.1: secret")
	for name, pe := range map[string]*problem.Error{
		"typed nil":    nil,
		"unknown code": {Code: "NOPE", Detail: "secret detail", Err: plain},
	} {
		w := httptest.NewRecorder()
		got := problem.Writer{Now: testkit.NewClock().Now}.Write(w, httptest.NewRequest("GET", "/v1/", nil), "req_1", pe)
		if got == nil || got.Code != problem.InternalError || got.Err == nil || w.Code != 500 {
			t.Errorf("Write(%s) = %+v, status %d; want INTERNAL_ERROR with a cause, 500", name, got, w.Code)
			continue
		}
		if body := w.Body.String(); strings.Contains(body, "secret") || strings.Contains(body, "10.0.0.1") {
			t.Errorf("Write(%s) body %s carries the cause", name, body)
		}
		if pe != nil && !errors.Is(got, plain) {
			t.Errorf("Write(%s) loses the cause for logs: %v", name, got.Err)
		}
		if msg := got.Error(); !strings.HasPrefix(msg, "INTERNAL_ERROR") { // logs call it: no panic
			t.Errorf("Write(%s).Error() = %q", name, msg)
		}
	}
}

func TestErrorMethods(t *testing.T) {
	cause := errors.New("upstream said no")
	pe := &problem.Error{Code: problem.BadGateway, Detail: "The PMS failed.", Err: cause}
	if got, want := pe.Error(), "BAD_GATEWAY: The PMS failed.: upstream said no"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(pe, cause) || pe.Unwrap() != cause {
		t.Error("Unwrap does not give the cause")
	}
	if pe.Status() != http.StatusBadGateway {
		t.Errorf("Status() = %d", pe.Status())
	}
	if got := (&problem.Error{Code: problem.RouteNotFound}).Error(); got != "ROUTE_NOT_FOUND" {
		t.Errorf("Error() = %q", got)
	}
	if (&problem.Error{Code: "NOPE"}).Status() != http.StatusInternalServerError {
		t.Error("unknown code status is not 500")
	}
}
