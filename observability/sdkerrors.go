package observability

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// SDKErrors turns the OpenTelemetry SDK's own failures (an export that
// failed, a metric the backend refused) into JSON WARN lines of the
// service's log, instead of the SDK's default, free text on stderr in the
// middle of the JSON stream (docs/contract.md section 20). Each line names
// the signal (traces, metrics, logs) and the endpoint; one line per signal
// per interval at most, the next saying how many were left out.
//
// The SDK's handler is process-global (otel.SetErrorHandler, otel.SetLogger):
// the caller (a command's run) installs Handle and Logger, once; nothing
// here touches a global.
type SDKErrors struct {
	log      *slog.Logger
	getenv   func(string) string
	now      func() time.Time
	interval time.Duration

	mu   sync.Mutex
	last map[string]time.Time
	left map[string]int
}

// NewSDKErrors logs to log at most one line per signal per interval;
// getenv reads the OTLP endpoint variables, now the clock (nil: time.Now).
func NewSDKErrors(log *slog.Logger, getenv func(string) string, interval time.Duration, now func() time.Time) *SDKErrors {
	if now == nil {
		now = time.Now
	}
	return &SDKErrors{log: log, getenv: getenv, now: now, interval: interval,
		last: map[string]time.Time{}, left: map[string]int{}}
}

// Handle logs err (otel.ErrorHandler's method).
func (e *SDKErrors) Handle(err error) {
	if err == nil {
		return
	}
	msg := err.Error()
	signal := sdkSignal(msg)
	now := e.now()
	e.mu.Lock()
	if last, ok := e.last[signal]; ok && now.Sub(last) < e.interval {
		e.left[signal]++
		e.mu.Unlock()
		return
	}
	e.last[signal] = now
	left := e.left[signal]
	e.left[signal] = 0
	e.mu.Unlock()
	attrs := []any{"signal", signal, "endpoint", e.endpoint(signal), "error", msg}
	if left > 0 {
		attrs = append(attrs, "suppressed", left)
	}
	e.log.Warn("telemetry export failed", attrs...)
}

// Logger is a logr.Logger writing to the same log, for otel.SetLogger: the
// SDK's own warnings (V(1)) come out at WARN, its errors at ERROR, and its
// chatter (V(4) and up) only at DEBUG.
func (e *SDKErrors) Logger() logr.Logger {
	return logr.FromSlogHandler(sdkLevels{e.log.Handler()})
}

// sdkLevels maps logr's verbosity, which FromSlogHandler turns into
// slog.Level(-V), onto the levels the SDK means: V(1) warn, the rest debug.
type sdkLevels struct{ slog.Handler }

func (h sdkLevels) level(l slog.Level) slog.Level {
	switch {
	case l >= slog.LevelInfo:
		return l
	case l == -1:
		return slog.LevelWarn
	default:
		return slog.LevelDebug
	}
}

func (h sdkLevels) Enabled(ctx context.Context, l slog.Level) bool {
	return h.Handler.Enabled(ctx, h.level(l))
}

func (h sdkLevels) Handle(ctx context.Context, r slog.Record) error {
	r.Level = h.level(r.Level)
	return h.Handler.Handle(ctx, r)
}

func (h sdkLevels) WithAttrs(as []slog.Attr) slog.Handler { return sdkLevels{h.Handler.WithAttrs(as)} }
func (h sdkLevels) WithGroup(g string) slog.Handler       { return sdkLevels{h.Handler.WithGroup(g)} }

// sdkSignal names the signal an SDK error is about, from its text (the
// exporters say "traces export", "failed to upload metrics", ...).
func sdkSignal(msg string) string {
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "trace") || strings.Contains(m, "span"):
		return "traces"
	case strings.Contains(m, "metric"):
		return "metrics"
	case strings.Contains(m, "log"):
		return "logs"
	}
	return "unknown"
}

// endpoint is where signal is sent: its own OTLP variable, else the
// common one, else the exporter's default.
func (e *SDKErrors) endpoint(signal string) string {
	if v := strings.TrimSpace(e.getenv("OTEL_EXPORTER_OTLP_" + strings.ToUpper(signal) + "_ENDPOINT")); v != "" && signal != "unknown" {
		return v
	}
	if v := strings.TrimSpace(e.getenv("OTEL_EXPORTER_OTLP_ENDPOINT")); v != "" {
		return v
	}
	return "default"
}
