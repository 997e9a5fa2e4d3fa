package edge_test

import (
	"io"
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/problem"
)

// docs/contract.md section 4.
func TestRequestHeaders(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for _, tc := range []struct {
		name    string
		headers map[string][]string
		noUA    bool
		code    problem.Code
		errors  []problem.FieldError // field and code only
	}{
		{name: "no User-Agent", noUA: true, code: problem.MissingRequiredHeader,
			errors: []problem.FieldError{{Field: "User-Agent", Code: "REQUIRED"}}},
		{name: "empty User-Agent", headers: map[string][]string{"User-Agent": {""}}, code: problem.MissingRequiredHeader,
			errors: []problem.FieldError{{Field: "User-Agent", Code: "REQUIRED"}}},
		{name: "short User-Agent", headers: map[string][]string{"User-Agent": {"ab"}}, code: problem.InvalidHeader,
			errors: []problem.FieldError{{Field: "User-Agent", Code: "INVALID_FORMAT"}}},
		{name: "long User-Agent", headers: map[string][]string{"User-Agent": {strings.Repeat("a", 256)}}, code: problem.InvalidHeader,
			errors: []problem.FieldError{{Field: "User-Agent", Code: "TOO_LONG"}}},
		{name: "non-ASCII User-Agent", headers: map[string][]string{"User-Agent": {"agent/é"}}, code: problem.InvalidHeader,
			errors: []problem.FieldError{{Field: "User-Agent", Code: "INVALID_FORMAT"}}},
		{name: "bad correlation id", headers: map[string][]string{"Svc-Correlation-Id": {"has space"}}, code: problem.InvalidHeader,
			errors: []problem.FieldError{{Field: "Svc-Correlation-Id", Code: "INVALID_FORMAT"}}},
		{name: "empty correlation id", headers: map[string][]string{"Svc-Correlation-Id": {""}}, code: problem.InvalidHeader,
			errors: []problem.FieldError{{Field: "Svc-Correlation-Id", Code: "INVALID_FORMAT"}}},
		{name: "long correlation id", headers: map[string][]string{"Svc-Correlation-Id": {strings.Repeat("a", 129)}}, code: problem.InvalidHeader,
			errors: []problem.FieldError{{Field: "Svc-Correlation-Id", Code: "TOO_LONG"}}},
		{name: "two correlation ids", headers: map[string][]string{"Svc-Correlation-Id": {"a", "b"}}, code: problem.InvalidHeader,
			errors: []problem.FieldError{{Field: "Svc-Correlation-Id", Code: "INVALID_FORMAT"}}},
		{name: "both at once", noUA: true, headers: map[string][]string{"Svc-Correlation-Id": {"x y"}}, code: problem.MissingRequiredHeader,
			errors: []problem.FieldError{{Field: "User-Agent", Code: "REQUIRED"}, {Field: "Svc-Correlation-Id", Code: "INVALID_FORMAT"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := request{path: "/v1/properties", key: "live", headers: tc.headers, noUA: tc.noUA}
			res := h.do(req)
			p := wantProblem(t, req, res, tc.code)
			if len(p.Errors) != len(tc.errors) {
				t.Fatalf("errors %+v, want %+v", p.Errors, tc.errors)
			}
			for i, want := range tc.errors {
				if p.Errors[i].Field != want.Field || p.Errors[i].Code != want.Code || p.Errors[i].Detail == "" {
					t.Errorf("errors[%d] = %+v, want %+v", i, p.Errors[i], want)
				}
			}
			if res.header.Get("Svc-Correlation-Id") != "" {
				t.Errorf("an invalid correlation id was echoed")
			}
		})
	}

	t.Run("valid User-Agents", func(t *testing.T) {
		for _, ua := range []string{"abc", strings.Repeat("a", 255), "Mozilla/5.0 (X11; Linux x86_64) ~!@#$%^&*()"} {
			req := request{path: "/v1/", key: "live", headers: map[string][]string{"User-Agent": {ua}}}
			wantOK(t, req, h.do(req))
		}
	})

	t.Run("valid correlation id echoed on every response", func(t *testing.T) {
		id := "Ab9._=+/-" + strings.Repeat("z", 119)
		hdr := map[string][]string{"Svc-Correlation-Id": {id}}
		for _, req := range []request{
			{path: "/v1/properties", key: "live", headers: hdr},
			{path: "/v1/properties", headers: hdr},
			{path: "/v1/nowhere", headers: hdr},
			{path: "/v1/properties?bad=1", key: "live", headers: hdr},
			{method: "POST", path: "/v1/", headers: hdr},
		} {
			if got := h.do(req).header.Get("Svc-Correlation-Id"); got != id {
				t.Errorf("%s %s: echoed %q", req.method, req.path, got)
			}
		}
	})

	t.Run("unexpected body", func(t *testing.T) {
		req := request{path: "/v1/properties", key: "live", body: strings.NewReader(`{"a":1}`)}
		wantProblem(t, req, h.do(req), problem.UnexpectedRequestBody)
		// A chunked body: Transfer-Encoding with no Content-Length.
		req = request{path: "/v1/properties", key: "live", body: io.NopCloser(strings.NewReader("x"))}
		wantProblem(t, req, h.do(req), problem.UnexpectedRequestBody)
	})
}

func TestAccept(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for _, accept := range []string{"*/*", "application/*", "application/json", "application/json; charset=utf-8",
		"APPLICATION/JSON", "text/html, application/json;q=0.5", "text/html;q=0.9, */*;q=0.1", "application/json;q=1"} {
		req := request{path: "/v1/", key: "live", headers: map[string][]string{"Accept": {accept}}}
		wantOK(t, req, h.do(req))
	}
	for _, accept := range []string{"text/html", "application/xml", "application/json;q=0", "*/*;q=0",
		"application/problem+json", "text/*", "", "application/json;q=abc", "application/jsonx"} {
		req := request{path: "/v1/properties", key: "live", headers: map[string][]string{"Accept": {accept}}}
		wantProblem(t, req, h.do(req), problem.NotAcceptable)
	}
}

// Every response carries a unique request id, equal to meta or problem.
func TestRequestIDsUnique(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	seen := map[string]bool{}
	for i := 0; i < 50; i++ {
		req := request{path: "/v1/", key: "live"}
		if i%2 == 1 {
			req.path = "/v1/nowhere"
		}
		id := h.do(req).header.Get("Svc-Request-Id")
		if seen[id] {
			t.Fatalf("request id %s repeated", id)
		}
		seen[id] = true
	}
}

// Raw requests, for what net/http's client refuses to send.
func TestRawRequests(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	auth := "Authorization: Bearer " + h.keys["live"] + "\r\n"
	for _, tc := range []struct {
		name, head, want string
	}{
		{"semicolon in query", "GET /v1/properties?page=1;perPage=2 HTTP/1.1\r\nHost: x\r\nUser-Agent: raw/1.0\r\n" + auth, `"MALFORMED_QUERY_STRING"`},
		{"two User-Agents", "GET /v1/properties HTTP/1.1\r\nHost: x\r\nUser-Agent: raw/1.0\r\nUser-Agent: raw/2.0\r\n" + auth, `"field":"User-Agent","code":"INVALID_FORMAT"`},
		{"chunked body", "GET /v1/ HTTP/1.1\r\nHost: x\r\nUser-Agent: raw/1.0\r\nTransfer-Encoding: chunked\r\n" + auth, `"UNEXPECTED_REQUEST_BODY"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := ""
			if strings.Contains(tc.head, "chunked") {
				body = "1\r\nx\r\n0\r\n\r\n"
			}
			got := h.rawRequest(tc.head, body)
			if !strings.HasPrefix(got, "HTTP/1.1 400 ") || !strings.Contains(got, tc.want) {
				t.Errorf("got %s", got)
			}
		})
	}
}
