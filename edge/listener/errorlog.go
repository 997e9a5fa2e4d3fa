package listener

import (
	"log"
	"log/slog"
	"strings"
	"time"

	"github.com/partner-edge/partner-edge/observability"
)

// net/http's own errors (TLS handshake failures, accept errors, panics
// outside the handler) are warnings an operator should see, but a port
// scanner or a load balancer's TCP checks can raise one per connection.
// Each cause (the message up to its first digit: the peer's address and
// the like left out) is logged at most once per observability.LogEvery;
// the rest are counted, and the count rides on the next line of that
// cause (docs/operations.md, "What to watch").
const errorLogClip = 512 // bytes of one message kept

// errorLogCause is how much of a message, at most, names its cause.
const errorLogCause = 80

// newErrorLog returns the http.Server.ErrorLog that writes to logger.
func newErrorLog(logger *slog.Logger, now func() time.Time) *log.Logger {
	return log.New(&errorLogWriter{log: logger, throttle: &observability.Throttle{Now: now}}, "", 0)
}

// errorLogWriter logs each line written at warn level, rate-limited per
// cause.
type errorLogWriter struct {
	log      *slog.Logger
	throttle *observability.Throttle
}

func (e *errorLogWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p[:min(len(p), errorLogClip)]))
	suppressed, ok := e.throttle.Allow(errorCause(msg))
	if !ok {
		return len(p), nil
	}
	attrs := []any{"error", msg}
	if suppressed > 0 {
		attrs = append(attrs, "suppressed", suppressed)
	}
	e.log.Warn("http server error", append(attrs, "repeats_every", observability.LogEvery.String())...)
	return len(p), nil
}

// errorCause is the part of msg that names its cause: up to its first
// digit (where a peer's address, a port or a count begins), at most
// errorLogCause bytes.
func errorCause(msg string) string {
	if i := strings.IndexAny(msg, "0123456789"); i >= 0 {
		msg = msg[:i]
	}
	return msg[:min(len(msg), errorLogCause)]
}
