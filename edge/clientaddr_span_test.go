package edge_test

import (
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// The server span's client.address is the address the edge resolved: an
// X-Forwarded-For only from a trusted proxy, the TCP peer otherwise.
func TestClientAddressInSpan(t *testing.T) {
	for _, tc := range []struct{ trusted, want string }{
		{"", "127.0.0.1"},
		{"127.0.0.0/8", "198.51.100.9"},
	} {
		tel, simTel, exp := newTelemetry(t)
		h := newHarness(t, harnessOptions{tel: tel, simTel: simTel, trustedProxies: tc.trusted})
		exp.Reset()
		req := request{path: "/v1/", key: "live", headers: map[string][]string{"X-Forwarded-For": {"203.0.113.1, 198.51.100.9"}}}
		wantOK(t, req, h.do(req))
		var got []string
		for _, s := range exp.GetSpans() {
			if s.SpanKind != trace.SpanKindServer || s.Name != "GET /v1" {
				continue
			}
			for _, kv := range s.Attributes {
				if kv.Key == "client.address" {
					got = append(got, kv.Value.AsString())
				}
			}
		}
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("trusted %q: client.address %q, want once %q", tc.trusted, got, tc.want)
		}
	}
}
