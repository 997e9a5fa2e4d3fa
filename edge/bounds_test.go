package edge_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/problem"
)

// unknownQuery is a query of at least size bytes of distinct unknown names.
func unknownQuery(size int) (string, int) {
	var b strings.Builder
	n := 0
	for b.Len() < size {
		if n > 0 {
			b.WriteByte('&')
		}
		fmt.Fprintf(&b, "unknown%05d=1", n)
		n++
	}
	return b.String(), n
}

// docs/contract.md section 10: a 400 lists at most 20 entries and says the
// total; no answer grows with the request.
func TestBoundedAnswers(t *testing.T) {
	h := newHarness(t, harnessOptions{})

	t.Run("64 KB query of unknown names", func(t *testing.T) {
		q, n := unknownQuery(64 << 10)
		// Repeats of listed names are neither listed nor counted again.
		req := request{path: "/v1/properties?" + q + "&unknown00000=2&unknown00019=3", key: "live"}
		res := h.do(req)
		p := wantProblem(t, req, res, problem.UnknownQueryParameter)
		if len(res.body) >= 8<<10 {
			t.Errorf("body is %d bytes, want < 8 KB", len(res.body))
		}
		if len(p.Errors) != problem.MaxErrors {
			t.Errorf("%d entries, want %d", len(p.Errors), problem.MaxErrors)
		}
		if want := fmt.Sprintf("%d problems were found", n); !strings.Contains(p.Detail, want) {
			t.Errorf("detail %q does not say %q", p.Detail, want)
		}
		for i, fe := range p.Errors {
			if want := fmt.Sprintf("unknown%05d", i); fe.Field != want {
				t.Errorf("entry %d names %q, want %q (first seen first, once)", i, fe.Field, want)
			}
		}
	})

	t.Run("long names clipped", func(t *testing.T) {
		name := strings.Repeat("%01", 3000)
		req := request{path: "/v1/properties?" + name + "=1&b" + name + "=2", key: "live"}
		res := h.do(req)
		p := wantProblem(t, req, res, problem.UnknownQueryParameter)
		if len(res.body) >= 2<<10 || len(p.Errors) != 2 {
			t.Errorf("%d bytes, %d entries: %s", len(res.body), len(p.Errors), short(res.body))
		}
	})

	for _, path := range []string{
		"/V1/PROPERTIES/" + strings.Repeat("%01", 20000),
		"/v1/properties/" + strings.Repeat("a", 20000) + "/",
		"/" + strings.Repeat("x", 20000),
		"/v1/" + strings.Repeat("%2F", 7000),
	} {
		t.Run(fmt.Sprintf("path of %d characters", len(path)), func(t *testing.T) {
			res := h.do(request{path: path})
			var p struct{ Instance, Detail string }
			if err := json.Unmarshal(res.body, &p); err != nil || res.status/100 != 4 {
				t.Fatalf("%d %s", res.status, short(res.body))
			}
			if len(res.body) >= 8<<10 {
				t.Errorf("body is %d bytes, want < 8 KB", len(res.body))
			}
			if !strings.HasSuffix(p.Instance, "…") {
				t.Errorf("instance not clipped: %.80q", p.Instance)
			}
		})
	}

	t.Run("long id in the id route", func(t *testing.T) {
		req := request{path: "/v1/properties/" + strings.Repeat("%01", 20000), key: "live"}
		res := h.do(req)
		if res.status != http.StatusBadRequest || len(res.body) >= 8<<10 {
			t.Errorf("%d, %d bytes", res.status, len(res.body))
		}
	})
}

// docs/contract.md section 10: request fields written to the log are clipped.
func TestAccessLogClipsRequestFields(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	method := strings.Repeat("M", 60000)
	raw := h.rawRequest(method+" /v1/health HTTP/1.1\r\nHost: x\r\n", "")
	if !strings.HasPrefix(raw, "HTTP/1.1 405") {
		t.Fatalf("answer: %.200s", raw)
	}
	sc := bufio.NewScanner(strings.NewReader(h.logs.String()))
	sc.Buffer(nil, 1<<20)
	found := false
	for sc.Scan() {
		var line struct{ Msg, Method string }
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Msg != "request" {
			continue
		}
		if len(sc.Bytes()) > 2<<10 {
			t.Errorf("log line of %d bytes", len(sc.Bytes()))
		}
		if strings.HasPrefix(line.Method, "MMMM") {
			found = true
			if len(line.Method) > 40 {
				t.Errorf("method logged with %d bytes", len(line.Method))
			}
		}
	}
	if !found {
		t.Errorf("no access log line for the request:\n%.500s", h.logs.String())
	}
}
