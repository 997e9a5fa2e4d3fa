package observability

import (
	"log"
	"log/slog"
	"strings"
)

// RouteStdLog sends what Go's standard logger prints into logger, as JSON
// lines like every other, until restore is called. net/http's Transport
// prints there, with no hook of its own, when a PMS writes on an idle
// connection ("Unsolicited response received on idle HTTP channel
// starting with ..."): that line quotes the PMS's bytes, which may hold
// internal fields docs/pms-api.md says never leave the edge, so only its
// first words are kept. The standard logger is the process's own: only a
// program calls this (cmd/edge), as it sets its signal handling.
func RouteStdLog(logger *slog.Logger) (restore func()) {
	prevOut, prevFlags := log.Writer(), log.Flags()
	log.SetFlags(0)
	log.SetOutput(stdLogWriter{logger})
	return func() {
		log.SetOutput(prevOut)
		log.SetFlags(prevFlags)
	}
}

type stdLogWriter struct{ log *slog.Logger }

// stdLogClip bounds the part of a standard-log line that is kept.
const stdLogClip = 200

func (w stdLogWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p[:min(len(p), stdLogClip)]))
	if head, _, ok := strings.Cut(msg, " starting with "); ok {
		msg = head // what follows quotes the peer's bytes
	}
	w.log.Warn("go runtime", "error", msg)
	return len(p), nil
}
