package main

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpSpan is what the receiver keeps of an exported span.
type otlpSpan struct {
	name, traceID, parentID, service string
}

// otlpReceiver is a minimal OTLP/HTTP (protobuf) trace collector on
// loopback. Anything but /v1/traces is answered 404, so an export of
// metrics would fail run's telemetry shutdown.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []otlpSpan
	other []string // paths of other exports
	srv   *httptest.Server
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	rc := &otlpReceiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *otlpReceiver) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/traces" {
		rc.mu.Lock()
		rc.other = append(rc.other, r.URL.Path)
		rc.mu.Unlock()
		http.NotFound(w, r)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, "bad gzip", http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	var req colltrace.ExportTraceServiceRequest
	if err != nil || proto.Unmarshal(b, &req) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				rc.spans = append(rc.spans, otlpSpan{s.GetName(), hex.EncodeToString(s.GetTraceId()),
					hex.EncodeToString(s.GetParentSpanId()), service})
			}
		}
	}
	rc.mu.Unlock()
	out, _ := proto.Marshal(&colltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// The program traces each request (span named by route template, child of
// the caller's traceparent, service.name pmsim), exports over OTLP when an
// endpoint is set, flushes on exit, and exports no metrics.
func TestRunExportsTraces(t *testing.T) {
	rc := newOTLPReceiver(t)
	// The OTLP exporter reads its endpoint from the process environment
	// (autoexport): set it there too, and clear what could interfere.
	for _, k := range []string{"OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_PROTOCOL",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
		"OTEL_SDK_DISABLED", "OTEL_TRACES_SAMPLER", "OTEL_EXPORTER_OTLP_HEADERS"} {
		t.Setenv(k, "")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.srv.URL)
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rc.srv.URL, "OTEL_SERVICE_NAME": "not-pmsim"}
	url, lines, stop := start(t, env, "--hotels", "3")
	<-lines // brands line
	if l := <-lines; l != "traces exporter: otlp" {
		t.Fatalf("exporter line %q", l)
	}

	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req, _ := http.NewRequest(http.MethodGet, url+"/internal/v2/brands/aurora/hotels/some-id", nil)
	req.Header.Set("Traceparent", "00-"+traceID+"-"+parentID+"-01")
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if err := stop(); err != nil { // the batch is flushed by the shutdown
		t.Fatalf("run: %v", err)
	}

	rc.mu.Lock()
	defer rc.mu.Unlock()
	want := otlpSpan{"GET /internal/v2/brands/{brandCode}/hotels/{hotelId}", traceID, parentID, "pmsim"}
	if len(rc.spans) != 1 || rc.spans[0] != want {
		t.Errorf("exported spans %+v, want just %+v", rc.spans, want)
	}
	if len(rc.other) != 0 {
		t.Errorf("other exports %v, want none (no metrics)", rc.other)
	}
}

func TestRunWithoutExporter(t *testing.T) {
	for _, k := range []string{"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		t.Setenv(k, "")
	}
	_, lines, stop := start(t, nil)
	<-lines
	if l := <-lines; l != "traces exporter: none" {
		t.Fatalf("exporter line %q", l)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
