package observability

import (
	"context"
	"os"
	"strconv"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// TestResourceTellsInstancesApart: service.instance.id is the host name
// and pid unless OTEL_RESOURCE_ATTRIBUTES names one; partner_edge.brand
// is Config.Brand.
func TestResourceTellsInstancesApart(t *testing.T) {
	host, _ := os.Hostname()
	for _, tc := range []struct {
		name string
		vars map[string]string
		want string
	}{
		{"default", nil, host + "-" + strconv.Itoa(os.Getpid())},
		{"environment wins", map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "service.instance.id=edge-7d9f-abcde,k8s.pod.name=edge-7d9f-abcde"}, "edge-7d9f-abcde"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			tel, err := New(context.Background(), Config{Getenv: env(tc.vars), SpanExporter: exp, Brand: "aurora"})
			if err != nil {
				t.Fatal(err)
			}
			defer tel.Shutdown(context.Background())
			_, span := tel.Tracer().Start(context.Background(), "x")
			span.End()
			spans := exp.GetSpans()
			if len(spans) != 1 {
				t.Fatalf("%d spans", len(spans))
			}
			if got := resourceAttr(spans[0], semconv.ServiceInstanceIDKey); got != tc.want {
				t.Errorf("service.instance.id = %q, want %q", got, tc.want)
			}
			if got := resourceAttr(spans[0], AttrBrand); got != "aurora" {
				t.Errorf("partner_edge.brand = %q, want aurora", got)
			}
		})
	}
}
