package listener

import (
	"log"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// net/http's own errors (TLS handshake failures, accept errors, panics
// outside the handler) are warnings an operator should see, but a port
// scanner or a load balancer's TCP checks can raise one per connection.
// At most errorLogBurst lines are logged per errorLogWindow; the rest are
// counted, and the count rides on the next line logged.
const (
	errorLogBurst  = 10
	errorLogWindow = time.Minute
	errorLogClip   = 512 // bytes of one message kept
)

// newErrorLog returns the http.Server.ErrorLog that writes to logger.
func newErrorLog(logger *slog.Logger, now func() time.Time) *log.Logger {
	return log.New(&errorLogWriter{log: logger, now: now}, "", 0)
}

// errorLogWriter logs each line written at warn level, rate-limited.
type errorLogWriter struct {
	log *slog.Logger
	now func() time.Time

	mu         sync.Mutex
	windowFrom time.Time
	logged     int // lines logged since windowFrom
	suppressed int // lines dropped since the last line logged
}

func (e *errorLogWriter) Write(p []byte) (int, error) {
	e.mu.Lock()
	now := e.now()
	if now.Sub(e.windowFrom) >= errorLogWindow || now.Before(e.windowFrom) {
		e.windowFrom, e.logged = now, 0
	}
	if e.logged >= errorLogBurst {
		e.suppressed++
		e.mu.Unlock()
		return len(p), nil
	}
	e.logged++
	suppressed := e.suppressed
	e.suppressed = 0
	e.mu.Unlock()

	msg := strings.TrimSpace(string(p[:min(len(p), errorLogClip)]))
	attrs := []any{"error", msg}
	if suppressed > 0 {
		attrs = append(attrs, "suppressed", suppressed)
	}
	e.log.Warn("http server error", attrs...)
	return len(p), nil
}
