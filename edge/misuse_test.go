package edge_test

// Misuse of the partner API over real HTTP, one test per item of the OWASP
// API Security Top 10 (2023) that applies to a read-only edge; each test is
// named after the behaviour it checks, its comment after the OWASP item.

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/problem"
)

// API1:2023 Broken Object Level Authorization: a key sees only the
// properties it is granted; others answer as if they did not exist.
func TestKeySeesOnlyGrantedProperties(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ids := activeIDs(t, h.live, testBrand)
	req := request{path: "/v1/properties/" + ids[0], key: "granted"}
	wantOK(t, req, h.do(req))
	req = request{path: "/v1/properties/" + ids[len(ids)-1], key: "granted"}
	wantProblem(t, req, h.do(req), problem.PropertyNotFound)
	req = request{path: "/v1/properties?perPage=100", key: "granted"}
	env := wantOK(t, req, h.do(req))
	var items []struct{ ID string }
	_ = json.Unmarshal(env.Data, &items)
	if len(items) != 3 || env.Meta.Pagination.Total != 3 {
		t.Errorf("granted key listed %d (total %d), want its 3", len(items), env.Meta.Pagination.Total)
	}
}

// API2:2023 Broken Authentication: every way of not presenting a valid,
// current key is refused; a key in the query string is not a key.
func TestEveryMissingOrInvalidKeyRefused(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for _, tc := range []struct {
		req  request
		code problem.Code
	}{
		{request{path: "/v1/properties"}, problem.MissingAuthHeader},
		{request{path: "/v1/properties", key: "svc_live_" + strings.Repeat("a", 32)}, problem.InvalidAPIKey},
		{request{path: "/v1/properties", key: "expired"}, problem.APIKeyExpired},
		{request{path: "/v1/properties", headers: map[string][]string{"Authorization": {"Basic dXNlcjpwYXNz"}}}, problem.InvalidAuthHeader},
		{request{path: "/v1/properties?api_key=" + h.keys["live"]}, problem.MissingAuthHeader},
	} {
		res := h.do(tc.req)
		wantProblem(t, tc.req, res, tc.code)
		if !strings.HasPrefix(res.header.Get("Www-Authenticate"), "Bearer") {
			t.Errorf("%s: no Bearer challenge", tc.req.path)
		}
	}
}

// API3:2023 Broken Object Property Level Authorization: a property carries
// the contract's fields only, never the PMS's.
func TestPropertyCarriesContractFieldsOnly(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	id := activeIDs(t, h.live, testBrand)[0]
	public := []string{"object", "id", "name", "code", "status", "timezone", "createdAt", "updatedAt"}
	for _, path := range []string{"/v1/properties/" + id, "/v1/properties?perPage=100"} {
		req := request{path: path, key: "live"}
		res := h.do(req)
		env := wantOK(t, req, res)
		var items []map[string]any
		if err := json.Unmarshal(env.Data, &items); err != nil {
			var one map[string]any
			_ = json.Unmarshal(env.Data, &one)
			items = []map[string]any{one}
		}
		for _, it := range items {
			if len(it) != len(public) {
				t.Errorf("%s: item has keys %v", path, it)
			}
			for _, k := range public {
				if _, ok := it[k]; !ok {
					t.Errorf("%s: item lacks %s", path, k)
				}
			}
		}
		for _, name := range internalNames {
			if strings.Contains(string(res.body), name) {
				t.Errorf("%s: body carries %s", path, name)
			}
		}
	}
}

// API4:2023 Unrestricted Resource Consumption: answers stay a few KB
// whatever the size of the query, path or headers.
func TestAnswersStaySmallWhateverTheRequestSize(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	q, _ := unknownQuery(64 << 10)
	for _, req := range []request{
		{path: "/v1/properties?" + q, key: "live"},
		{path: "/V1/PROPERTIES/" + strings.Repeat("%01", 20000)},
		{path: "/v1/properties", key: "live", headers: map[string][]string{"User-Agent": {strings.Repeat("u", 60000)}}},
		{path: "/v1/properties", key: "live", headers: map[string][]string{"Svc-Correlation-Id": {strings.Repeat("c", 60000)}}},
		{path: "/v1/properties?perPage=1000000", key: "live"},
	} {
		res := h.do(req)
		if res.status/100 != 4 || len(res.body) >= 8<<10 {
			t.Errorf("%.60s: %d, %d bytes", req.path, res.status, len(res.body))
		}
	}
}

// API7:2023 Server Side Request Forgery: nothing in a request chooses the
// PMS address: an absolute request-target, a Host header, or a URL in the
// path or query leaves the upstream as configured.
func TestRequestNeverChoosesThePMSAddress(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	auth := "Authorization: Bearer " + h.keys["live"] + "\r\nUser-Agent: t/1\r\n"
	want := h.do(request{path: "/v1/properties?perPage=5", key: "live"})
	for _, head := range []string{
		"GET http://169.254.169.254/v1/properties?perPage=5 HTTP/1.1\r\nHost: 169.254.169.254\r\n" + auth,
		"GET /v1/properties?perPage=5 HTTP/1.1\r\nHost: evil.example:9\r\nX-Forwarded-Host: evil.example\r\n" + auth,
	} {
		raw := h.rawRequest(head, "")
		if !strings.HasPrefix(raw, "HTTP/1.1 200") {
			t.Fatalf("answer: %.300s", raw)
		}
		body := raw[strings.Index(raw, "\r\n\r\n")+4:]
		var got, exp struct{ Data json.RawMessage }
		_ = json.Unmarshal([]byte(body), &got)
		_ = json.Unmarshal(want.body, &exp)
		if string(got.Data) != string(exp.Data) {
			t.Errorf("upstream changed by %q", head[:40])
		}
	}
	for _, path := range []string{"/v1/properties/http:%2F%2Fevil.example%2F", "/v1/properties?url=http://evil.example/", "//evil.example/v1/properties"} {
		res := h.do(request{path: path, key: "live"})
		if res.status != http.StatusBadRequest && res.status != http.StatusNotFound {
			t.Errorf("%s: %d", path, res.status)
		}
	}
}

// API8:2023 Security Misconfiguration: every answer carries nosniff and
// no-store (harness.do checks), only GET is served, and no error body
// carries a stack trace or Go error text.
func TestAnswersCarrySafeHeadersAndNoInternals(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for _, m := range []string{"HEAD", "OPTIONS", "TRACE", "POST", "PUT", "PATCH", "DELETE"} {
		req := request{method: m, path: "/v1/properties", key: "live"}
		res := h.do(req)
		if res.status != http.StatusMethodNotAllowed || res.header.Get("Allow") != "GET" {
			t.Errorf("%s: %d Allow=%q", m, res.status, res.header.Get("Allow"))
		}
	}
	for _, req := range []request{{path: "/nowhere"}, {path: "/v1/properties/bad", key: "live"}, {path: "/v1/properties?page=%zz", key: "live"}} {
		res := h.do(req)
		for _, s := range []string{"goroutine", ".go:", "panic", "runtime.", "net/http"} {
			if strings.Contains(string(res.body), s) {
				t.Errorf("%s: body carries %q", req.path, s)
			}
		}
		if res.header.Get("Server") != "" || res.header.Get("X-Powered-By") != "" {
			t.Errorf("%s: software advertised", req.path)
		}
	}
}

// API9:2023 Improper Inventory Management: only the four documented
// routes answer; no debug, metrics, admin or other version is reachable
// on the partner listener.
func TestOnlyDocumentedRoutesAnswer(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for _, path := range []string{"/", "/v0/properties", "/v2/properties", "/v1/admin", "/debug/pprof/", "/metrics",
		"/v1/metrics", "/openapi.yaml", "/v1/openapi.json", "/v1/properties.json", "/v1/keys", "/health", "/v1/health/live"} {
		req := request{path: path, key: "live"}
		wantProblem(t, req, h.do(req), problem.RouteNotFound)
	}
	var n int
	for _, path := range []string{"/v1/", "/v1/health", "/v1/properties", "/v1/properties/" + activeIDs(t, h.live, testBrand)[0]} {
		if res := h.do(request{path: path, key: "live"}); res.status == http.StatusOK {
			n++
		}
	}
	if n != 4 {
		t.Errorf("%d of the 4 documented routes answered 200", n)
	}
}
