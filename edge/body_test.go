package edge_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/problem"
)

// exchange sends head (request line and headers, without the final blank
// line) and body on a fresh connection that does not ask to be closed,
// reads one response, and reports whether the server then closed the
// connection. Without the close, the read waits for the deadline.
func (h *harness) exchange(head, body string, waitClose bool) (res *http.Response, resBody []byte, closed bool) {
	h.t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.srv.URL, "http://"))
	if err != nil {
		h.t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, head+"\r\n"+body); err != nil {
		h.t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	res, err = http.ReadResponse(br, nil)
	if err != nil {
		h.t.Fatalf("no response: %v", err)
	}
	resBody, err = io.ReadAll(res.Body)
	if err != nil {
		h.t.Fatalf("read body: %v", err)
	}
	if !waitClose {
		return res, resBody, false
	}
	_, err = br.ReadByte()
	return res, resBody, err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}

// docs/contract.md section 10: an announced body is refused without reading
// it, and the connection is closed.
func TestAnnouncedBodyClosesConnection(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	auth := "Authorization: Bearer " + h.keys["live"] + "\r\nUser-Agent: t/1\r\nHost: x\r\n"
	for _, tc := range []struct {
		name, head, body string
		status           int
		code             problem.Code
	}{
		// A trickled body: 3 of 1000 bytes sent. Reading it would wait.
		{"trickled body", "GET /v1/properties HTTP/1.1\r\n" + auth + "Content-Length: 1000\r\n", "abc", 400, problem.UnexpectedRequestBody},
		{"chunked", "GET /v1/properties HTTP/1.1\r\n" + auth + "Transfer-Encoding: chunked\r\n", "3\r\nabc\r\n", 400, problem.UnexpectedRequestBody},
		// Go removes the Content-Length of a request that also has
		// Transfer-Encoding (RFC 9112 section 6.1): Transfer-Encoding decides.
		{"CL and TE, authenticated", "GET /v1/ HTTP/1.1\r\n" + auth + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n", 400, problem.UnexpectedRequestBody},
		{"CL and TE, health", "GET /v1/health HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n", 200, ""},
		{"CL and TE, no route", "GET /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n", 404, problem.RouteNotFound},
		{"CL and TE, unauthenticated", "GET /v1/properties HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n", 401, problem.MissingAuthHeader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body, closed := h.exchange(tc.head, tc.body, true)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.status, body)
			}
			if tc.code != "" {
				var p struct{ Code string }
				if err := json.Unmarshal(body, &p); err != nil || p.Code != string(tc.code) {
					t.Errorf("body %s, want code %s", body, tc.code)
				}
			}
			if !closed || !res.Close {
				t.Errorf("connection kept open (Connection: %q)", res.Header.Get("Connection"))
			}
		})
	}

	// A GET without a body keeps its connection.
	res, _, _ := h.exchange("GET /v1/properties HTTP/1.1\r\n"+auth, "", false)
	if res.StatusCode != 200 || res.Close {
		t.Errorf("plain GET: %d, close=%v", res.StatusCode, res.Close)
	}
}

// docs/contract.md section 10: an HTTP/2 stream that carries DATA without a
// length is a body like any other.
func TestHTTP2BodyRefused(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	srv := httptest.NewUnstartedServer(h.srv.Config.Handler)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	client := srv.Client()

	send := func(body io.Reader) (*http.Response, []byte) {
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/v1/properties", body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+h.keys["live"])
		req.Header.Set("User-Agent", "h2test/1.0")
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.ProtoMajor != 2 {
			t.Fatalf("protocol %s, want HTTP/2", res.Proto)
		}
		return res, b
	}
	if res, b := send(nil); res.StatusCode != 200 {
		t.Fatalf("h2 GET without body: %d %s", res.StatusCode, b)
	}
	// An unknown-length reader: the transport sends DATA frames and no
	// content-length.
	pr, pw := io.Pipe()
	go func() { _, _ = pw.Write([]byte("hello")); _ = pw.Close() }()
	res, b := send(pr)
	var p struct{ Code string }
	if res.StatusCode != 400 || json.Unmarshal(b, &p) != nil || p.Code != string(problem.UnexpectedRequestBody) {
		t.Errorf("h2 GET with body: %d %s", res.StatusCode, b)
	}
	if res.Header.Get("Connection") != "" {
		t.Errorf("HTTP/2 answer carries Connection: %q", res.Header.Get("Connection"))
	}
}
