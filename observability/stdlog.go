package observability

import (
	"log"
	"log/slog"
	"strings"
	"time"
)

// RouteStdLog sends what Go's standard logger prints into logger, as JSON
// lines like every other, until restore is called. net/http's Transport
// prints there, with no hook of its own, when a PMS writes on an idle
// connection ("Unsolicited response received on idle HTTP channel
// starting with ..."): that line quotes the PMS's bytes, and what the PMS
// sends stays inside (docs/contract.md section 22), so only the words
// before the first quote are kept, with the length of what was left out.
// The standard logger is the process's own: only a program calls this
// (cmd/edge), as it sets its signal handling. A PMS can make such a line
// once per answer, so each is written at most once per LogEvery per
// message, with the count of those left out.
func RouteStdLog(logger *slog.Logger) (restore func()) {
	return routeStdLog(logger, nil)
}

// routeStdLog is RouteStdLog with the throttle's clock (nil: time.Now).
func routeStdLog(logger *slog.Logger, now func() time.Time) (restore func()) {
	prevOut, prevFlags := log.Writer(), log.Flags()
	log.SetFlags(0)
	log.SetOutput(stdLogWriter{log: logger, throttle: &Throttle{Now: now}})
	return func() {
		log.SetOutput(prevOut)
		log.SetFlags(prevFlags)
	}
}

type stdLogWriter struct {
	log      *slog.Logger
	throttle *Throttle // by the kept message
}

// stdLogClip bounds the part of a standard-log line that is kept.
const stdLogClip = 200

func (w stdLogWriter) Write(p []byte) (int, error) {
	msg := string(p[:min(len(p), stdLogClip)])
	// What Go's packages quote ("%q", or after "starting with") is what
	// they read from a peer.
	if i := strings.IndexAny(msg, "\"'`"); i >= 0 {
		msg = msg[:i]
	}
	if head, _, ok := strings.Cut(msg, " starting with"); ok {
		msg = head
	}
	msg = strings.TrimSpace(msg)
	suppressed, ok := w.throttle.Allow(msg)
	if !ok {
		return len(p), nil
	}
	attrs := []any{"error", msg}
	if left := len(strings.TrimSpace(string(p))) - len(msg); left > 0 {
		attrs = append(attrs, "bytes_left_out", left)
	}
	if suppressed > 0 {
		attrs = append(attrs, "suppressed", suppressed)
	}
	w.log.Warn("go runtime", append(attrs, "repeats_every", LogEvery.String())...)
	return len(p), nil
}
