package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/partner-edge/partner-edge/observability"
)

// accessLog is the access log's logger and the buffer under it.
type accessLog struct {
	log  *slog.Logger
	buf  *observability.LogBuffer // nil: off
	file *os.File                 // nil: stdout or stderr
}

// openAccessLog builds the access log EDGE_ACCESS_LOG names. It goes to
// stdout by default, as a container's log collector expects, apart from the
// diagnostics on stderr (the split of nginx's container image: access log on
// stdout, error log on stderr). Lines pass through an
// observability.LogBuffer, nginx's `buffer=64k flush=1s`: a request never
// waits for the output, and lines the output cannot take are dropped and
// counted (partner_edge_log_dropped_total).
func openAccessLog(cfg settings, stdout, stderr io.Writer) (*accessLog, error) {
	var out io.Writer
	a := &accessLog{}
	switch cfg.AccessLog {
	case "off":
		a.log = slog.New(slog.DiscardHandler)
		return a, nil
	case "stdout":
		out = stdout
	case "stderr":
		out = stderr
	default:
		f, err := os.OpenFile(cfg.AccessLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
		if err != nil {
			return nil, fmt.Errorf("EDGE_ACCESS_LOG: %w", err)
		}
		a.file, out = f, f
	}
	a.buf = observability.NewLogBuffer(out, observability.LogBufferConfig{})
	a.log = observability.NewLogger(a.buf, cfg.LogFormat, cfg.LogLevel, cfg.PMSToken)
	return a, nil
}

// close writes what is buffered (bounded: an output that blocks for ever
// does not hold the exit for more than 5 s) and closes the file.
func (a *accessLog) close(ctx context.Context, log *slog.Logger) {
	if a.buf == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := a.buf.Close(ctx); err != nil {
		log.Warn("access log not fully written at exit", "error", err)
	}
	if n := a.buf.Dropped(); n > 0 {
		log.Warn("access log lines dropped: the output did not keep up", "lines", n)
	}
	if a.file != nil {
		if err := a.file.Close(); err != nil {
			log.Warn("access log file", "error", err)
		}
	}
}
