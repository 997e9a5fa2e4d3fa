package pms

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/upstream"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/partner-edge/partner-edge/observability/testkit"
)

// planted is internal text a PMS puts where it should not.
const planted = "secret.owner@internal.example"

// rawAnswers answers every request on loopback with answer, as is.
func rawAnswers(t *testing.T, answer string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					if _, err := http.ReadRequest(br); err != nil {
						return
					}
					if _, err := c.Write([]byte(answer)); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return "http://" + ln.Addr().String()
}

// What the PMS sends stays inside (docs/contract.md section 22): a failure
// is its class and numbers, in the error's text, the logs at debug, the
// client spans of a tracing transport and Cause, whatever the PMS wrote.
func TestFailuresCarryAClassNeverThePMSsBytes(t *testing.T) {
	for _, tc := range []struct {
		name, answer, class string
	}{
		{"head line without a colon", "HTTP/1.1 200 OK\r\nowner_email " + planted + "\r\nContent-Length: 2\r\n\r\n{}", classMalformedHeader},
		{"status line", "HTTP/1.1-" + planted + " 200 OK\r\nContent-Length: 2\r\n\r\n{}", classMalformedStatus},
		{"500 with a reason and a body", "HTTP/1.1 500 " + planted + "\r\nContent-Length: 29\r\n\r\n" + planted, "status_500"},
		{"chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + planted + "\r\n", classMalformedBody},
		{"trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n" + planted + "\r\n\r\n", classMalformedHeader},
		{"Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: " + planted + "\r\n\r\n{}", classMalformedHeader},
		{"body", "HTTP/1.1 200 OK\r\nContent-Length: 29\r\n\r\n" + planted, "not_object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tel, exp := newTelemetry(t)
			logger, logs := testkit.NewLogger()
			cfg := testConfig(rawAnswers(t, tc.answer))
			cfg.Logger, cfg.Tracer = logger, tel.Tracer()
			cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return tel.Transport(rt, ResendCount) }
			c := newTestClient(t, cfg)
			ctx, root := tel.Tracer().Start(context.Background(), "edge request")
			_, err := c.GetHotel(ctx, "aurora", hotelID(1))
			root.End()
			if err == nil {
				t.Fatal("no error")
			}
			if got := upstream.Cause(err); got != tc.class {
				t.Errorf("Cause %q, want %q (error %v)", got, tc.class, err)
			}
			if strings.Contains(err.Error(), "internal.example") || strings.Contains(fmt.Sprintf("%+v", err), "internal.example") {
				t.Errorf("the error quotes the PMS: %v", err)
			}
			// An answer read whole is no failed attempt: its failure is the
			// call's (not_object).
			if strings.Contains(logs.String(), "internal.example") ||
				tc.class != "not_object" && !strings.Contains(logs.String(), "pms attempt: failed") {
				t.Errorf("debug log quotes the PMS, or says nothing:\n%s", logs)
			}
			var spans tracetest.SpanStubs
			testkit.Eventually(t, "the call's span and its attempts' ended", func() bool {
				spans = exp.GetSpans()
				return len(spans) >= 3 // the request's, the call's, at least one attempt's
			})
			var all bytes.Buffer
			for _, s := range spans {
				fmt.Fprintf(&all, "%s %v %v %v\n", s.Name, s.Status, s.Attributes, s.Events)
			}
			if strings.Contains(all.String(), "internal.example") {
				t.Errorf("a span quotes the PMS:\n%s", all.String())
			}
		})
	}
}

// Cause names each failure of the client by its class.
func TestCauseNamesEveryFailure(t *testing.T) {
	addr := testkit.RefusingAddr(t) // nothing listens: the connection is refused
	cfg := testConfig("http://" + addr)
	cfg.Logger = slog.New(slog.DiscardHandler)
	_, refused := newTestClient(t, cfg).GetHotel(context.Background(), "aurora", hotelID(1))
	for _, tc := range []struct {
		err  error
		want string
	}{
		{refused, classConnectionRefused},
		{&upstream.Error{Kind: upstream.BadGateway, Err: &statusError{status: 503}}, "status_503"},
		{&sheddingError{status: 429}, "shed_429"},
		{&heldError{}, "held"},
		{OverBound(10), "walk_over_bound"},
		{&upstream.Error{Kind: upstream.NotFound, Err: upstream.ErrNotFound}, "not_found"},
		{&callerGoneError{err: context.Canceled}, classCanceled},
		{&upstream.Error{Kind: upstream.Timeout, Err: context.DeadlineExceeded}, classTimeout},
		{&upstream.Error{Kind: upstream.Internal}, "internal"},
		{nil, ""},
	} {
		if got := upstream.Cause(tc.err); got != tc.want {
			t.Errorf("Cause(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
