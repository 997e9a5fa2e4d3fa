package testkit

import (
	"bytes"
	"net/http"
	"testing"

	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The receiver keeps each span's error status and the bytes of each trace
// export, where a test looks for text that must never be exported.
func TestOTLPReceiverKeepsStatusAndBytes(t *testing.T) {
	rc := NewOTLPReceiver(t)
	attr := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	req := &colltrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{
			{TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{2}, 8), Name: "ok"},
			{TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{3}, 8), Name: "failed",
				Status:     &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR},
				Attributes: []*commonpb.KeyValue{attr("error.type", "planted-text")}},
		}}},
	}}}
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Post(rc.URL+"/v1/traces", "application/x-protobuf", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("export answered %d", res.StatusCode)
	}
	spans := rc.Spans()
	if len(spans) != 2 || spans[0].Error || !spans[1].Error || spans[1].Name != "failed" {
		t.Fatalf("spans %+v; want ok then failed with Error set", spans)
	}
	if !rc.TracesHold("planted-text") {
		t.Error("TracesHold misses an attribute's value")
	}
	if rc.TracesHold("never-sent") {
		t.Error("TracesHold finds text never exported")
	}
}
