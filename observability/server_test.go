package observability

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/partner-edge/partner-edge/observability/testkit"
)

// serveOne runs h behind Middleware for req and returns the one exported span.
func serveOne(t *testing.T, tel *Telemetry, exp *tracetest.InMemoryExporter, req *http.Request, h http.HandlerFunc) tracetest.SpanStub {
	t.Helper()
	exp.Reset()
	tel.Middleware()(h).ServeHTTP(httptest.NewRecorder(), req)
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans exported, want 1", len(spans))
	}
	return spans[0]
}

// The server span carries the answer's status code; 5xx (and only 5xx)
// makes it an Error span, as the HTTP semantic conventions ask of servers.
func TestServerSpanStatus(t *testing.T) {
	tel, exp, _ := newTest(t, nil)
	for _, tt := range []struct {
		name      string
		h         http.HandlerFunc
		status    int64
		errStatus bool
		bodySize  int64
	}{
		{"503", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) }, 503, true, 0},
		{"500 with body", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "boom", 500) }, 500, true, 5},
		{"404", func(w http.ResponseWriter, _ *http.Request) { http.NotFound(w, nil) }, 404, false, 19},
		{"429", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(429) }, 429, false, 0},
		{"200 by Write", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "{}") }, 200, false, 2},
		{"nothing written", func(http.ResponseWriter, *http.Request) {}, 200, false, 0},
		{"early hints then 502", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(502)
		}, 502, true, 0},
		{"second WriteHeader ignored", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(400)
			w.WriteHeader(500)
		}, 400, false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := serveOne(t, tel, exp, httptest.NewRequest("GET", "/v1/properties", nil), tt.h)
			if v, ok := attr(s, "http.response.status_code"); !ok || v.AsInt64() != tt.status {
				t.Errorf("http.response.status_code = %v (present %v), want %d", v.AsInt64(), ok, tt.status)
			}
			if got := s.Status.Code == codes.Error; got != tt.errStatus {
				t.Errorf("span status %v, want error %v", s.Status.Code, tt.errStatus)
			}
			if v, _ := attr(s, "http.response.body.size"); v.AsInt64() != tt.bodySize {
				t.Errorf("http.response.body.size = %d, want %d", v.AsInt64(), tt.bodySize)
			}
		})
	}
}

// A recording span carries the request's semantic-convention attributes.
func TestServerSpanRequestAttributes(t *testing.T) {
	tel, exp, _ := newTest(t, nil)
	req := httptest.NewRequest("GET", "http://edge.example:8443/v1/properties?perPage=5", nil)
	req.RemoteAddr = "[2001:db8::7]:51000"
	req.Header.Set("User-Agent", "partner-bot/2.1")
	req.Header.Set("X-Forwarded-For", " 203.0.113.9 , 10.0.0.1")
	s := serveOne(t, tel, exp, req, func(http.ResponseWriter, *http.Request) {})
	if s.SpanKind != trace.SpanKindServer || s.Name != "GET" {
		t.Errorf("span %q kind %v, want GET server", s.Name, s.SpanKind)
	}
	want := map[attribute.Key]any{
		"http.request.method":       "GET",
		"url.scheme":                "http",
		"url.path":                  "/v1/properties",
		"server.address":            "edge.example",
		"server.port":               int64(8443),
		"network.peer.address":      "2001:db8::7",
		"network.peer.port":         int64(51000),
		"client.address":            "2001:db8::7", // X-Forwarded-For is anyone's to send
		"network.protocol.version":  "1.1",
		"user_agent.original":       "partner-bot/2.1",
		"http.response.status_code": int64(200),
	}
	for k, w := range want {
		v, ok := attr(s, k)
		if !ok || v.AsInterface() != w {
			t.Errorf("%s = %v (present %v), want %v", k, v.AsInterface(), ok, w)
		}
	}
	for _, k := range []attribute.Key{"url.query", "http.request.method_original"} {
		if _, ok := attr(s, k); ok {
			t.Errorf("unexpected %s", k)
		}
	}

	// Default port, unknown method, no forwarding header: no server.port,
	// _OTHER with the original kept, the peer as client.
	req = httptest.NewRequest("BREW", "http://edge.example/pot", nil)
	s = serveOne(t, tel, exp, req, func(http.ResponseWriter, *http.Request) {})
	if s.Name != "HTTP" {
		t.Errorf("span name %q for BREW, want HTTP", s.Name)
	}
	for k, w := range map[attribute.Key]string{
		"http.request.method":          "_OTHER",
		"http.request.method_original": "BREW",
		"client.address":               "192.0.2.1", // httptest.NewRequest's RemoteAddr
	} {
		if v, _ := attr(s, k); v.AsString() != w {
			t.Errorf("%s = %q, want %q", k, v.AsString(), w)
		}
	}
	if _, ok := attr(s, "server.port"); ok {
		t.Error("server.port set for the scheme's default port")
	}
}

// A sampled-out request still gets its own valid span context, a child of
// the caller's, so the edge's Traceparent response header names the edge
// span with flags 00; nothing is exported and the writer is not wrapped.
func TestServerSpanSampledOut(t *testing.T) {
	for _, tt := range []struct {
		sampler, header string
		continued       bool
	}{
		{"parentbased_always_on", "00-" + vecTrace + "-" + vecSpan + "-00", true},
		{"always_off", "00-" + vecTrace + "-" + vecSpan + "-01", true},
		{"always_off", "", false},
	} {
		tel, exp, _ := newTest(t, map[string]string{"OTEL_TRACES_SAMPLER": tt.sampler})
		rec := httptest.NewRecorder()
		var sc trace.SpanContext
		var tp string
		var sameWriter bool
		tel.Middleware()(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sc = trace.SpanContextFromContext(r.Context())
			tp = Traceparent(r.Context())
			sameWriter = w == http.ResponseWriter(rec)
			if baggage.FromContext(r.Context()).Len() != 0 {
				t.Errorf("%s: partner baggage in the request context", tt.sampler)
			}
			w.WriteHeader(503)
		})).ServeHTTP(rec, func() *http.Request {
			r := httptest.NewRequest("GET", "/v1/properties", nil)
			if tt.header != "" {
				r.Header.Set("Traceparent", tt.header)
			}
			r.Header.Set("Baggage", "partner=untrusted")
			return r
		}())
		if !sc.IsValid() || sc.IsSampled() || sc.IsRemote() {
			t.Fatalf("%s %q: span context %+v, want a valid, local, unsampled one", tt.sampler, tt.header, sc)
		}
		if sc.SpanID().String() == vecSpan {
			t.Errorf("%s: handler got the caller's span id, want the edge span's own", tt.sampler)
		}
		if got := sc.TraceID().String() == vecTrace; got != tt.continued {
			t.Errorf("%s %q: continued %v, want %v", tt.sampler, tt.header, got, tt.continued)
		}
		if want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-00"; tp != want {
			t.Errorf("%s: Traceparent %q, want %q", tt.sampler, tp, want)
		}
		if !sameWriter {
			t.Errorf("%s: a sampled-out request's writer was wrapped", tt.sampler)
		}
		if rec.Code != 503 || len(exp.GetSpans()) != 0 {
			t.Errorf("%s: status %d, %d spans exported, want 503 and none", tt.sampler, rec.Code, len(exp.GetSpans()))
		}
	}
}

// The recording wrapper lets http.ResponseController and http.Flusher reach
// the connection: flush, deadlines and hijack work through it.
func TestServerSpanWriterReachesConnection(t *testing.T) {
	tel, exp, _ := newTest(t, nil)
	errs := make(chan error, 3)
	srv := httptest.NewServer(tel.Middleware()(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if r.URL.Path == "/hijack" {
			conn, buf, err := rc.Hijack()
			errs <- err
			if err == nil {
				_, _ = buf.WriteString("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
				_ = buf.Flush()
				conn.Close()
			}
			return
		}
		errs <- rc.SetWriteDeadline(time.Now().Add(time.Minute))
		if _, ok := w.(http.Flusher); !ok {
			errs <- io.ErrUnexpectedEOF
			return
		}
		_, _ = io.WriteString(w, "part")
		errs <- rc.Flush()
	})))
	defer srv.Close()

	resp, err := srv.Client().Get(srv.URL + "/flush")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("through the wrapper: %v", err)
		}
	}
	if string(body) != "part" {
		t.Errorf("body %q", body)
	}

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, "GET /hijack HTTP/1.1\r\nHost: x\r\n\r\n")
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err := <-errs; err != nil {
		t.Errorf("Hijack through the wrapper: %v", err)
	}
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 204") {
		t.Errorf("hijacked answer %q, %v", line, err)
	}
	// Both spans end as their handlers return, possibly just after the
	// client has its answer.
	testkit.Eventually(t, "both spans ended", func() bool { return len(exp.GetSpans()) >= 2 })
	if n := len(exp.GetSpans()); n != 2 {
		t.Errorf("%d spans, want 2", n)
	}
}

// A panicking handler still ends its span (net/http recovers the panic).
func TestServerSpanEndsOnPanic(t *testing.T) {
	tel, exp, _ := newTest(t, nil)
	h := tel.Middleware()(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }))
	func() {
		defer func() {
			if recover() == nil {
				t.Error("panic swallowed")
			}
		}()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	}()
	if n := len(exp.GetSpans()); n != 1 {
		t.Errorf("%d spans after a panic, want 1", n)
	}
}

// A sampled-out request costs the middleware only the span, its contexts and
// the request copy: a guard against the per-request allocations otelhttp had
// (about 35).
func TestServerSpanSampledOutAllocations(t *testing.T) {
	tel, _, _ := newTest(t, map[string]string{"OTEL_TRACES_SAMPLER": "always_off"})
	h := tel.Middleware()(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	req := httptest.NewRequest("GET", "/v1/properties", nil)
	req.Header.Set("Traceparent", "00-"+vecTrace+"-"+vecSpan+"-01")
	req.Header.Set("User-Agent", "bench/1.0")
	w := httptest.NewRecorder()
	if n := testing.AllocsPerRun(100, func() { h.ServeHTTP(w, req) }); n > 6 {
		t.Errorf("sampled-out request: %.0f allocations in the middleware, want at most 6", n)
	}
}
