package webhooks

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/partner-edge/partner-edge/observability"
)

// Outcome is how one attempt ended: delivered, or the class of its
// failure. The values are the attempts metric's outcome label and, but for
// an answer's status, the reasons an endpoint is disabled for.
type Outcome string

// The outcomes of an attempt.
const (
	Delivered        Outcome = "delivered"         // a 2xx answer
	FailedStatus     Outcome = "http_status"       // an answer neither 2xx nor 3xx
	FailedRedirect   Outcome = "redirect"          // a 3xx answer: redirects are not followed
	FailedTimeout    Outcome = "timeout"           // no answer within AttemptTimeout
	FailedRefused    Outcome = "address_refused"   // the Guard refused the address connected to
	FailedScheme     Outcome = "scheme_refused"    // an http:// URL without AllowHTTP, or not a URL
	FailedDNS        Outcome = "dns_failed"        // the name did not resolve
	FailedTLS        Outcome = "tls_failed"        // the TLS handshake or the certificate failed
	FailedConnection Outcome = "connection_failed" // refused, reset, or closed before an answer
	FailedSecret     Outcome = "secret_invalid"    // the stored secret is damaged: nothing sent
	Canceled         Outcome = "canceled"          // delivery stopped mid-attempt: no attempt counted

	// EventsExpired is no attempt's outcome but the reason an endpoint is
	// disabled when the feed no longer holds its position (ErrExpired).
	EventsExpired Outcome = "events_expired"
)

// Outcomes lists every Outcome but Canceled: the attempts metric's series.
var Outcomes = []Outcome{Delivered, FailedStatus, FailedRedirect, FailedTimeout, FailedRefused,
	FailedScheme, FailedDNS, FailedTLS, FailedConnection, FailedSecret}

// Result is one attempt's outcome and the answer's status (0: none).
type Result struct {
	Outcome Outcome
	Status  int
}

// Reason is the disabledReason of an endpoint whose last attempt ended so:
// "http_" and the status for an answer (a 3xx included), else the Outcome.
// Never a byte of the receiver's answer.
func (r Result) Reason() string {
	if r.Status != 0 {
		return "http_" + strconv.Itoa(r.Status)
	}
	return string(r.Outcome)
}

// Sender makes one attempt at delivering ev to ep.
type Sender interface {
	Send(ctx context.Context, ep *Endpoint, ev Event, attempt int) Result
}

// HTTPSender sends attempts as Standard Webhooks v1 says: a POST of the
// event's body, signed (Sign), through Client.
type HTTPSender struct {
	// Client makes the attempts; nil: NewClient(ClientConfig{}) (https,
	// every inside address refused).
	Client *http.Client
	// AllowHTTP lets attempts go to http:// URLs
	// (EDGE_WEBHOOK_ALLOW_HTTP); false: https only.
	AllowHTTP bool
	// Now stamps webhook-timestamp; nil: time.Now.
	Now func() time.Time
	// Tracer makes a client span per attempt; nil: none.
	Tracer trace.TracerProvider
	// UserAgent is sent with every attempt; empty: "partner-edge-webhooks".
	UserAgent string

	once sync.Once
	def  *http.Client // Client's default, made once: its connections kept between attempts
}

// Close closes the connections kept between attempts (and their
// goroutines): at shutdown, once the Deliverer's Run has returned.
func (s *HTTPSender) Close() { s.client().CloseIdleConnections() }

func (s *HTTPSender) client() *http.Client {
	if s.Client != nil {
		return s.Client
	}
	s.once.Do(func() { s.def = NewClient(ClientConfig{}) })
	return s.def
}

var _ Sender = (*HTTPSender)(nil)

// Attributes of an attempt's span beside the HTTP ones (method, server
// address and port, status, error type): never the URL's path or query
// (they may carry a partner's token), never the secret.
const (
	AttrEndpointID = attribute.Key("partner_edge.webhook.endpoint_id")
	AttrEventID    = attribute.Key("partner_edge.webhook.event_id")
	AttrAttempt    = attribute.Key("partner_edge.webhook.attempt")
	AttrOutcome    = attribute.Key("partner_edge.webhook.outcome")
)

// Send implements Sender: attempt is its number for ev (1 for the first).
func (s *HTTPSender) Send(ctx context.Context, ep *Endpoint, ev Event, attempt int) Result {
	u, err := url.Parse(ep.URL)
	if err != nil || u.Host == "" || !(u.Scheme == "https" || u.Scheme == "http" && s.AllowHTTP) {
		return Result{Outcome: FailedScheme}
	}
	tp := cmp.Or[trace.TracerProvider](s.Tracer, noop.NewTracerProvider())
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		semconv.HTTPRequestMethodPost, semconv.ServerAddress(u.Hostname()), semconv.URLScheme(u.Scheme),
		AttrEndpointID.String(ep.ID), AttrEventID.String(ev.ID), AttrAttempt.Int(attempt))}
	if p, err := strconv.Atoi(u.Port()); err == nil {
		opts = append(opts, trace.WithAttributes(semconv.ServerPort(p)))
	}
	if ev.Walk.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: ev.Walk}))
	}
	ctx, span := tp.Tracer(observability.ScopeName).Start(ctx, "POST", opts...)
	defer span.End()

	res := s.send(ctx, u, ep, ev)
	span.SetAttributes(AttrOutcome.String(string(res.Outcome)))
	if res.Status != 0 {
		span.SetAttributes(semconv.HTTPResponseStatusCode(res.Status))
	}
	if res.Outcome != Delivered {
		span.SetAttributes(semconv.ErrorTypeKey.String(res.Reason()))
		span.SetStatus(codes.Error, res.Reason())
	}
	return res
}

func (s *HTTPSender) send(ctx context.Context, u *url.URL, ep *Endpoint, ev Event) Result {
	actx, cancel := context.WithTimeout(ctx, AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, u.String(), bytes.NewReader(ev.Body))
	if err != nil {
		return Result{Outcome: FailedScheme}
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	if err := Sign(req.Header, ep.Secret, ev.ID, now(), ev.Body); err != nil {
		return Result{Outcome: FailedSecret}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", cmp.Or(s.UserAgent, "partner-edge-webhooks"))
	resp, err := s.client().Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return Result{Outcome: Canceled}
		}
		return Result{Outcome: classify(err)}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxAnswerBody))
	_ = resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return Result{Outcome: Delivered, Status: resp.StatusCode}
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return Result{Outcome: FailedRedirect, Status: resp.StatusCode}
	}
	return Result{Outcome: FailedStatus, Status: resp.StatusCode}
}

// classify is the class of a failed attempt's error: its kind only, so
// that nothing the receiver sent reaches a reason, a span or a log.
func classify(err error) Outcome {
	var (
		dnsErr  *net.DNSError
		certErr *tls.CertificateVerificationError
		recErr  tls.RecordHeaderError
		alert   tls.AlertError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		netErr  net.Error
	)
	switch {
	case errors.Is(err, ErrAddressRefused):
		return FailedRefused
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return FailedTimeout
	case errors.As(err, &dnsErr):
		return FailedDNS
	case errors.As(err, &certErr), errors.As(err, &recErr), errors.As(err, &alert),
		errors.As(err, &unknown), errors.As(err, &host), errors.As(err, &invalid):
		return FailedTLS
	}
	return FailedConnection
}
