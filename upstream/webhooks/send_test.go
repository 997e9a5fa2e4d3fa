package webhooks_test

import (
	"context"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"go.opentelemetry.io/otel/trace"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

// loopback is a client allowed to reach test receivers on 127.0.0.1.
func loopback(t *testing.T) *http.Client {
	t.Helper()
	allow, err := webhooks.ParseAllow("127.0.0.1/32")
	if err != nil {
		t.Fatal(err)
	}
	return webhooks.NewClient(webhooks.ClientConfig{Guard: webhooks.Guard{Allow: allow}})
}

const eventBody = `{"object":"event","id":"evt_01","type":"property.updated","occurredAt":"2026-11-22T09:00:00.000Z","data":{"object":"property","id":"ACME-0001","name":"Caf\u00e9 \u2603"}}`

func testEndpoint(url string) *webhooks.Endpoint {
	return &webhooks.Endpoint{ID: "whe_1", KeyID: "key_1", URL: url, Secret: webhooks.NewSecret(), Status: webhooks.StatusEnabled}
}

// TestSendVerifiedByReferenceLibrary: two attempts at one event, as a
// receiver sees them: the body byte for byte, content-type JSON, the
// event's id as webhook-id both times, each attempt's own timestamp, and
// a signature the Standard Webhooks reference library verifies.
func TestSendVerifiedByReferenceLibrary(t *testing.T) {
	type got struct {
		header http.Header
		body   []byte
		err    error
	}
	var mu sync.Mutex
	var gots []got
	ep := testEndpoint("")
	wh, err := standardwebhooks.NewWebhook(ep.Secret)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		gots = append(gots, got{r.Header.Clone(), b, wh.Verify(b, r.Header)})
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	ep.URL = srv.URL + "/hooks/edge"
	start := time.Now()
	times := []time.Time{start, start.Add(5 * time.Second)}
	var n atomic.Int64
	s := &webhooks.HTTPSender{Client: loopback(t), AllowHTTP: true, Now: func() time.Time { return times[n.Add(1)-1] }}
	ev := webhooks.Event{ID: "evt_01", OccurredAt: start, Body: []byte(eventBody)}
	for i := range 2 {
		if res := s.Send(context.Background(), ep, ev, i+1); res.Outcome != webhooks.Delivered || res.Status != 204 {
			t.Fatalf("attempt %d: %+v", i+1, res)
		}
	}
	if len(gots) != 2 {
		t.Fatalf("the receiver got %d requests, want 2", len(gots))
	}
	for i, g := range gots {
		if g.err != nil {
			t.Errorf("attempt %d: the reference library: %v", i+1, g.err)
		}
		if string(g.body) != eventBody {
			t.Errorf("attempt %d: body %s, want the event's bytes", i+1, g.body)
		}
		if ct := g.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("attempt %d: content-type %q", i+1, ct)
		}
		if id := g.header.Get("webhook-id"); id != "evt_01" {
			t.Errorf("attempt %d: webhook-id %q, want the event's id", i+1, id)
		}
		if ts := g.header.Get("webhook-timestamp"); ts != strconv.FormatInt(times[i].Unix(), 10) {
			t.Errorf("attempt %d: webhook-timestamp %s, want %d", i+1, ts, times[i].Unix())
		}
		if sig := g.header.Get("webhook-signature"); !strings.HasPrefix(sig, "v1,") {
			t.Errorf("attempt %d: webhook-signature %q", i+1, sig)
		}
	}
	other, err := standardwebhooks.NewWebhook(webhooks.NewSecret())
	if err != nil {
		t.Fatal(err)
	}
	if other.Verify(gots[0].body, gots[0].header) == nil {
		t.Error("another endpoint's secret verified the delivery")
	}
}

// TestSendOutcomes: a 2xx is delivered; any other status is a failed
// attempt with its status, a 3xx included and never followed.
func TestSendOutcomes(t *testing.T) {
	var followed atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, _ *http.Request) { followed.Add(1) })
	mux.HandleFunc("/status/{code}", func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.PathValue("code"))
		if code >= 300 && code < 400 {
			w.Header().Set("Location", "/elsewhere")
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, "receiver's words that must go nowhere")
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	s := &webhooks.HTTPSender{Client: loopback(t), AllowHTTP: true, Now: testkit.From(testkit.Epoch)}
	for code, want := range map[int]webhooks.Outcome{
		200: webhooks.Delivered, 201: webhooks.Delivered, 202: webhooks.Delivered, 204: webhooks.Delivered, 299: webhooks.Delivered,
		301: webhooks.FailedRedirect, 302: webhooks.FailedRedirect, 303: webhooks.FailedRedirect,
		307: webhooks.FailedRedirect, 308: webhooks.FailedRedirect,
		400: webhooks.FailedStatus, 404: webhooks.FailedStatus, 410: webhooks.FailedStatus, 429: webhooks.FailedStatus,
		500: webhooks.FailedStatus, 503: webhooks.FailedStatus,
	} {
		res := s.Send(context.Background(), testEndpoint(srv.URL+"/status/"+strconv.Itoa(code)), webhooks.Event{ID: "evt_1", Body: []byte(`{}`)}, 1)
		if res.Outcome != want || res.Status != code {
			t.Errorf("answer %d: %+v, want %s", code, res, want)
		}
		if want != webhooks.Delivered && res.Reason() != "http_"+strconv.Itoa(code) {
			t.Errorf("answer %d: reason %q", code, res.Reason())
		}
	}
	if followed.Load() != 0 {
		t.Fatalf("a redirect was followed %d times", followed.Load())
	}
}

// TestSendFailureClasses: failures without an answer carry their class
// only.
func TestSendFailureClasses(t *testing.T) {
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer tlsSrv.Close()
	allow, _ := webhooks.ParseAllow("127.0.0.1/32")
	guard := webhooks.Guard{Allow: allow}
	roots := x509.NewCertPool()
	roots.AddCert(tlsSrv.Certificate())
	dns := &fakeDNS{}                  // every name unknown
	now := testkit.From(testkit.Epoch) // the tests' day: no receiver here checks the timestamp
	system := &webhooks.HTTPSender{Client: webhooks.NewClient(webhooks.ClientConfig{Guard: guard, Resolver: dns.resolver()}), Now: now}
	trusting := &webhooks.HTTPSender{Client: webhooks.NewClient(webhooks.ClientConfig{Guard: guard, RootCAs: roots}), Now: now}
	plain := &webhooks.HTTPSender{Client: loopback(t), AllowHTTP: true, Now: now}
	refusing := testkit.RefusingAddr(t)
	bad := testEndpoint(tlsSrv.URL)
	bad.Secret = "whsec_short"
	for _, c := range []struct {
		name string
		s    *webhooks.HTTPSender
		ep   *webhooks.Endpoint
		want webhooks.Outcome
	}{
		{"a certificate the system's roots do not trust", system, testEndpoint(tlsSrv.URL), webhooks.FailedTLS},
		{"the same certificate, trusted", trusting, testEndpoint(tlsSrv.URL), webhooks.Delivered},
		{"http without AllowHTTP", trusting, testEndpoint(strings.Replace(tlsSrv.URL, "https", "http", 1)), webhooks.FailedScheme},
		{"not a URL", trusting, testEndpoint("://nope"), webhooks.FailedScheme},
		{"a name that does not resolve", system, testEndpoint("https://nowhere.partner.example/hook"), webhooks.FailedDNS},
		{"nothing listening", plain, testEndpoint("http://" + refusing + "/hook"), webhooks.FailedConnection},
		{"an inside address", system, testEndpoint("https://10.0.0.1/hook"), webhooks.FailedRefused},
		{"loopback, with the default client", &webhooks.HTTPSender{Now: now}, testEndpoint(tlsSrv.URL), webhooks.FailedRefused},
		{"a damaged secret", trusting, bad, webhooks.FailedSecret},
	} {
		res := c.s.Send(context.Background(), c.ep, webhooks.Event{ID: "evt_1", Body: []byte(`{}`)}, 1)
		if res.Outcome != c.want {
			t.Errorf("%s: %+v, want %s", c.name, res, c.want)
		}
		if c.want != webhooks.Delivered && (res.Status != 0 || res.Reason() != string(c.want)) {
			t.Errorf("%s: status %d, reason %q", c.name, res.Status, res.Reason())
		}
	}
}

// roundTrip is an http.RoundTripper of a function.
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// endless is an answer's body that never ends, counting what is read.
type endless struct{ read *atomic.Int64 }

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	e.read.Add(int64(len(p)))
	return len(p), nil
}

func (e endless) Close() error { return nil }

// TestSendReadsAtMost64KiB: an answer's body is read to at most 64 KiB,
// however long it is.
func TestSendReadsAtMost64KiB(t *testing.T) {
	var read atomic.Int64
	c := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: endless{&read}, Header: http.Header{}, Request: r}, nil
	})}
	s := &webhooks.HTTPSender{Client: c, Now: testkit.From(testkit.Epoch)}
	if res := s.Send(context.Background(), testEndpoint("https://hooks.partner.example/"), webhooks.Event{ID: "evt_1"}, 1); res.Outcome != webhooks.Delivered {
		t.Fatalf("%+v", res)
	}
	if n := read.Load(); n == 0 || n > webhooks.MaxAnswerBody {
		t.Fatalf("read %d bytes of the answer, want at most %d", n, webhooks.MaxAnswerBody)
	}
}

// TestSendTimesOut: a receiver that does not answer fails the attempt as
// a timeout after AttemptTimeout; delivery stopping is no attempt.
func TestSendTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
			<-r.Context().Done()
			return nil, r.Context().Err()
		})}
		s := &webhooks.HTTPSender{Client: c, Now: testkit.From(testkit.Epoch)} // the tests' day, moving with the bubble's clock
		start := time.Now()
		res := s.Send(context.Background(), testEndpoint("https://hooks.partner.example/"), webhooks.Event{ID: "evt_1"}, 1)
		if res.Outcome != webhooks.FailedTimeout || time.Since(start) != webhooks.AttemptTimeout {
			t.Fatalf("%+v after %s, want a timeout after %s", res, time.Since(start), webhooks.AttemptTimeout)
		}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel)
		if res := s.Send(ctx, testEndpoint("https://hooks.partner.example/"), webhooks.Event{ID: "evt_1"}, 1); res.Outcome != webhooks.Canceled {
			t.Fatalf("stopped mid-attempt: %+v, want canceled", res)
		}
	})
}

// TestSendSpan: one client span per attempt, naming the host alone: never
// the URL's path or query, never the secret; linked to the walk.
func TestSendSpan(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) }))
	defer srv.Close()
	tel := testkit.NewTelemetry(t)
	s := &webhooks.HTTPSender{Client: loopback(t), AllowHTTP: true, Tracer: tel.TracerProvider, Now: testkit.From(testkit.Epoch)}
	ep := testEndpoint(srv.URL + "/private/path?token=s3cr3t-token")
	walk := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled})
	s.Send(context.Background(), ep, webhooks.Event{ID: "evt_7", Body: []byte(`{}`), Walk: walk}, 3)
	spans := tel.Spans.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	sp := spans[0]
	if sp.Name != "POST" || sp.SpanKind != trace.SpanKindClient {
		t.Errorf("span %q of kind %s", sp.Name, sp.SpanKind)
	}
	attrs := map[string]string{}
	for _, a := range sp.Attributes {
		v := a.Value.String()
		attrs[string(a.Key)] = v
		for _, never := range []string{"s3cr3t", "/private", ep.Secret, "whsec_"} {
			if strings.Contains(v, never) {
				t.Errorf("attribute %s = %q carries %q", a.Key, v, never)
			}
		}
	}
	for k, v := range map[string]string{
		"server.address": "127.0.0.1", "http.request.method": "POST", "http.response.status_code": "503",
		"error.type": "http_503", "partner_edge.webhook.event_id": "evt_7", "partner_edge.webhook.endpoint_id": "whe_1",
		"partner_edge.webhook.attempt": "3", "partner_edge.webhook.outcome": "http_status",
	} {
		if attrs[k] != v {
			t.Errorf("%s = %q, want %q", k, attrs[k], v)
		}
	}
	if _, ok := attrs["url.full"]; ok {
		t.Error("the span carries url.full")
	}
	if len(sp.Links) != 1 || sp.Links[0].SpanContext.SpanID() != walk.SpanID() {
		t.Errorf("links %v, want the walk's span", sp.Links)
	}
}
