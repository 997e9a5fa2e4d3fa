package testkit

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// OTLPReceiver is an OTLP/HTTP (protobuf) collector on loopback, traces
// and metrics: what a collector receives of a program's exports. Point
// OTEL_EXPORTER_OTLP_ENDPOINT at URL. It is closed when the test ends.
type OTLPReceiver struct {
	URL string

	mu      sync.Mutex
	spans   []OTLPSpan
	metrics []string
	traces  [][]byte // each trace export as received (decompressed)
}

// OTLPSpan is one span received: its trace id (hex), its name, its
// resource's service.name and service.version, and whether its status is
// Error.
type OTLPSpan struct {
	TraceID, Name           string
	Service, ServiceVersion string
	Error                   bool
}

// NewOTLPReceiver starts a receiver for t.
func NewOTLPReceiver(t testing.TB) *OTLPReceiver {
	rc := &OTLPReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(srv.Close)
	rc.URL = srv.URL
	return rc
}

func (rc *OTLPReceiver) serve(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var resp proto.Message
	rc.mu.Lock()
	defer rc.mu.Unlock()
	switch r.URL.Path {
	case "/v1/traces":
		var req colltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range req.GetResourceSpans() {
			var name, version string
			for _, kv := range rs.GetResource().GetAttributes() {
				switch kv.GetKey() {
				case "service.name":
					name = kv.GetValue().GetStringValue()
				case "service.version":
					version = kv.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					rc.spans = append(rc.spans, OTLPSpan{TraceID: hex.EncodeToString(s.GetTraceId()), Name: s.GetName(),
						Service: name, ServiceVersion: version,
						Error: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR})
				}
			}
		}
		rc.traces = append(rc.traces, b)
		resp = &colltrace.ExportTraceServiceResponse{}
	case "/v1/metrics":
		var req collmetrics.ExportMetricsServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rm := range req.GetResourceMetrics() {
			for _, sm := range rm.GetScopeMetrics() {
				for _, m := range sm.GetMetrics() {
					rc.metrics = append(rc.metrics, m.GetName())
				}
			}
		}
		resp = &collmetrics.ExportMetricsServiceResponse{}
	default:
		http.NotFound(w, r)
		return
	}
	out, _ := proto.Marshal(resp)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// Spans is every span received so far, in order.
func (rc *OTLPReceiver) Spans() []OTLPSpan {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.spans)
}

// TracesHold reports whether any trace export received so far holds text
// in its bytes: a span's name, status message, attributes, events or
// resource, wherever the exporter put it.
func (rc *OTLPReceiver) TracesHold(text string) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, b := range rc.traces {
		if bytes.Contains(b, []byte(text)) {
			return true
		}
	}
	return false
}

// Metrics is the name of every metric received so far, in order (a name
// once per export).
func (rc *OTLPReceiver) Metrics() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.metrics)
}
