package edge_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/problem"
)

// internalNames are the PMS's field names and address: none may reach a
// partner (docs/contract.md section 6) unless the partner sent it first.
var internalNames = []string{"hotel_id", "brand_code", "display_name", "short_code", "legacy_property_code",
	"lifecycle", "time_zone", "created_at", "last_modified_ms", `"internal"`, "127.0.0.1", "localhost"}

// allowedStatus are the statuses a healthy edge in front of a healthy PMS
// may answer; 5xx would be a fault of the edge.
var allowedStatus = map[int]bool{200: true, 400: true, 401: true, 403: true, 404: true, 405: true, 406: true, 422: true, 429: true}

// FuzzHandler sends arbitrary methods, paths, queries and headers through
// the whole handler chain, in front of a real simulator: never a panic,
// always an allowed status, a body that is a problem (all ten fields, a
// registered code, under 8 KB) or an envelope, and no internal name.
func FuzzHandler(f *testing.F) {
	env := newBenchEnv(f, time.Hour, nil)
	id := env.activeIDs[0]
	for _, s := range []struct {
		method, target, headers string
		key                     uint8
	}{
		{"GET", "/v1/properties", "", 1},
		{"GET", "/v1/properties?page=2&perPage=10", "Accept: application/json", 1},
		{"GET", "/v1/properties/" + id, "Svc-Correlation-Id: abc", 1},
		{"GET", "/v1/properties/" + strings.ToUpper(id), "", 2},
		{"GET", "/v1/propert%69es", "", 1},
		{"GET", "/v1/properties%2F" + id, "", 1},
		{"GET", "/v1/", "User-Agent: x", 1},
		{"GET", "/v1/health", "", 0},
		{"GET", "/V1/PROPERTIES/" + strings.Repeat("%01", 100), "", 0},
		{"DELETE", "/v1/properties", "", 1},
		{"MKCOL", "/x", "", 3},
		{"GET", "http://169.254.169.254/latest/meta-data", "Host: 10.0.0.1", 1},
		{"GET", "/v1/properties?" + strings.Repeat("x=1&", 40), "", 1},
		{"GET", "/v1/properties", "Content-Length: 5", 1},
		{"GET", "/v1/properties", "Transfer-Encoding: chunked", 1},
		{"GET", "/v1/properties", "Accept: text/html;q=0.9, */*;q=0", 1},
		{"GET", "/v1/properties", "Authorization: Basic Zm9vOmJhcg==", 0},
	} {
		f.Add(s.method, s.target, s.headers, s.key)
	}
	f.Fuzz(func(t *testing.T, method, target, headers string, key uint8) {
		var raw strings.Builder
		raw.WriteString(method + " " + target + " HTTP/1.1\r\nHost: edge.example\r\n")
		switch key % 4 {
		case 1:
			raw.WriteString("Authorization: Bearer " + env.liveToken + "\r\n")
		case 2:
			raw.WriteString("Authorization: Bearer " + env.grantedToken + "\r\n")
		}
		if key%8 < 4 {
			raw.WriteString("User-Agent: fuzz/1.0\r\n")
		}
		for line := range strings.SplitSeq(headers, "\n") {
			if line != "" {
				raw.WriteString(line + "\r\n")
			}
		}
		raw.WriteString("\r\n")
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw.String())))
		if err != nil || !validMethod(r.Method) {
			return // net/http's server refuses it before any handler
		}
		w := httptest.NewRecorder()
		env.handler.ServeHTTP(w, r)
		checkAnswer(t, raw.String(), w)
	})
}

func checkAnswer(t *testing.T, req string, w *httptest.ResponseRecorder) {
	t.Helper()
	body := w.Body.Bytes()
	if !allowedStatus[w.Code] {
		t.Fatalf("status %d for %.300q: %.300s", w.Code, req, body)
	}
	for _, name := range internalNames {
		if strings.Contains(string(body), name) && !strings.Contains(req, strings.Trim(name, `"`)) {
			t.Fatalf("%q leaked for %.300q: %.300s", name, req, body)
		}
	}
	if w.Header().Get("X-Content-Type-Options") != "nosniff" || w.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("common headers missing: %v", w.Header())
	}
	if w.Code == http.StatusOK {
		var env struct {
			Data   json.RawMessage `json:"data"`
			Meta   json.RawMessage `json:"meta"`
			Status string          `json:"status"`
		}
		if err := json.Unmarshal(body, &env); err != nil || (env.Data == nil || env.Meta == nil) && env.Status != "ok" {
			t.Fatalf("200 body is not an envelope: %.300s", body)
		}
		return
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || len(fields) != 10 {
		t.Fatalf("%d body is not a problem: %.300s", w.Code, body)
	}
	var p struct {
		Status int
		Code   problem.Code
		Errors []problem.FieldError
	}
	if err := json.Unmarshal(body, &p); err != nil || !problem.Known(p.Code) || p.Status != w.Code ||
		problem.Lookup(p.Code).Status != w.Code || len(p.Errors) > problem.MaxErrors {
		t.Fatalf("inconsistent problem for %.300q: %.300s", req, body)
	}
	if len(body) >= 8<<10 {
		t.Fatalf("problem of %d bytes for a request of %d", len(body), len(req))
	}
}

// validMethod is net/http's rule: a method is a token (RFC 9110 5.6.2).
func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for i := 0; i < len(m); i++ {
		c := m[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}
