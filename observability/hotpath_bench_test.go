package observability_test

// Benchmarks of what the observability package adds to every request: the
// metrics of a request, the server span when sampled out and in, and one
// access-log line through each writer. Besides ns/op (wall time, noisy on a
// shared machine) they report cpu-ns/op: the process's CPU time per
// operation (getrusage), which also counts the LogBuffer's writer
// goroutine and the Go runtime's own work, and which other processes on
// the machine do not enter.
//
//	go test -run '^$' -bench . -benchmem -count 3 ./observability/

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/upstream/cache"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/partner-edge/partner-edge/observability"
)

func cpuNow(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measure runs f b.N times and reports allocations and CPU per call.
func measure(b *testing.B, f func()) {
	b.Helper()
	b.ReportAllocs()
	cpu0 := cpuNow(b)
	b.ResetTimer()
	for b.Loop() {
		f()
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuNow(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

func newTel(b *testing.B, env map[string]string) *observability.Telemetry {
	b.Helper()
	tel, err := observability.New(context.Background(), observability.Config{
		SpanExporter: discardSpans{}, MetricReader: sdkmetric.NewManualReader(),
		Getenv: func(k string) string { return env[k] }})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tel.Shutdown(context.Background()) })
	return tel
}

type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

// BenchmarkRequestMetricsCachedGet is the metrics of one cached request as the edge
// records them: in flight up and down, the duration by route and status,
// and a cache hit; two readers (Prometheus and a second one, as with OTLP).
func BenchmarkRequestMetricsCachedGet(b *testing.B) {
	tel := newTel(b, nil)
	m := tel.Metrics()
	lookups, err := cache.NewMetrics(tel.Meter(), "live")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	measure(b, func() {
		m.RequestStarted(ctx, http.MethodGet)
		lookups.Lookup(ctx, "hit")
		m.RequestDone(ctx, http.MethodGet, "/v1/properties/{propertyId}", 200, 3*time.Millisecond)
	})
}

// BenchmarkServerSpanSamplers is Middleware around a handler that does nothing:
// the span's cost per request with the samplers a deployment uses.
func BenchmarkServerSpanSamplers(b *testing.B) {
	for _, tc := range []struct{ name, sampler, arg, traceparent string }{
		{"ratio_0.01_no_parent", "parentbased_traceidratio", "0.01", ""},
		{"parent_sampled_out", "parentbased_always_on", "", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"},
		{"parent_sampled_in", "parentbased_always_on", "", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			tel := newTel(b, map[string]string{"OTEL_TRACES_SAMPLER": tc.sampler, "OTEL_TRACES_SAMPLER_ARG": tc.arg})
			h := tel.Middleware()(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
			r := httptest.NewRequest(http.MethodGet, "/v1/properties/x", nil)
			r.Header.Set("User-Agent", "bench/1.0")
			if tc.traceparent != "" {
				r.Header.Set("Traceparent", tc.traceparent)
			}
			w := httptest.NewRecorder()
			measure(b, func() { h.ServeHTTP(w, r) })
		})
	}
}

// BenchmarkAccessLogLine is one access-log line as the edge writes it
// (cmd/edge's JSON logger: log/slog's JSONHandler, the same attributes)
// into: nothing (the encoder alone), a LogBuffer over a file (as deployed), a bufio.Writer
// of the same 64 KiB under a mutex over the file (the library alternative:
// a full buffer is written on the request's own goroutine, and a slow
// output holds the request), and the file directly (one write system call
// per line, as before the LogBuffer).
func BenchmarkAccessLogLine(b *testing.B) {
	file := func(b *testing.B) *os.File {
		f, err := os.Create(filepath.Join(b.TempDir(), "access.log"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		return f
	}
	for _, tc := range []struct {
		name string
		w    func(b *testing.B) io.Writer
	}{
		{"encode_only", func(*testing.B) io.Writer { return io.Discard }},
		{"logbuffer_file", func(b *testing.B) io.Writer {
			buf := observability.NewLogBuffer(file(b), observability.LogBufferConfig{})
			b.Cleanup(func() { buf.Close(context.Background()) })
			return buf
		}},
		{"bufio_file", func(b *testing.B) io.Writer {
			bw := &lockedBufio{w: bufio.NewWriterSize(file(b), 64<<10)}
			b.Cleanup(func() { bw.w.Flush() })
			return bw
		}},
		{"file_unbuffered", func(b *testing.B) io.Writer { return file(b) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			log := observability.NewLogger(tc.w(b), "json", slog.LevelInfo, "pms-token-secret")
			ctx := context.Background()
			measure(b, func() {
				rec := slog.NewRecord(time.Now(), slog.LevelInfo, "request", 0)
				rec.AddAttrs(
					slog.String("method", "GET"),
					slog.String("route", "/v1/properties/{propertyId}"),
					slog.Int("status", 200),
					slog.Duration("duration", 83*time.Microsecond),
					slog.Int64("bytes", 336),
					slog.String("request_id", "req_qyyM8nwPfXTG8JvkGvFJKAUk"),
					slog.String("key_id", "key_7Hq2Lm9Xa1"),
					slog.String("client_address", "127.0.0.1"),
				)
				_ = log.Handler().Handle(ctx, rec)
			})
		})
	}
}

// lockedBufio is a bufio.Writer safe for the logger's concurrent writers.
type lockedBufio struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (l *lockedBufio) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
