package observability

import (
	"context"
	"io"
	"log/slog"
	"os"
	"time"
)

// AccessLog is the edge's access log: its logger and the buffer under it
// (docs/operations.md, EDGE_ACCESS_LOG).
type AccessLog struct {
	Log  *slog.Logger
	Buf  *LogBuffer // nil: off
	file *os.File   // nil: stdout or stderr
}

// OpenAccessLog builds the access log dest names: "stdout", "stderr",
// "off" or a file path (appended to, created with mode 0640), through a
// LogBuffer (docs/observability.md, "Logs"). format, level and secret are
// NewLogger's.
func OpenAccessLog(dest, format string, level slog.Level, secret string, stdout, stderr io.Writer) (*AccessLog, error) {
	var out io.Writer
	a := &AccessLog{}
	switch dest {
	case "off":
		a.Log = slog.New(slog.DiscardHandler)
		return a, nil
	case "stdout":
		out = stdout
	case "stderr":
		out = stderr
	default:
		f, err := os.OpenFile(dest, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
		if err != nil {
			return nil, err
		}
		a.file, out = f, f
	}
	a.Buf = NewLogBuffer(out, LogBufferConfig{})
	a.Log = NewLogger(a.Buf, format, level, secret)
	return a, nil
}

// Close writes what is buffered (bounded: an output that blocks for ever
// does not hold the exit for more than 5 s) and closes the file; what goes
// wrong is logged to log.
func (a *AccessLog) Close(ctx context.Context, log *slog.Logger) {
	if a.Buf == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := a.Buf.Close(ctx); err != nil {
		log.Warn("access log not fully written at exit", "error", err)
	}
	if n := a.Buf.Dropped(); n > 0 {
		log.Warn("access log lines dropped: the output did not keep up", "lines", n)
	}
	if a.file != nil {
		if err := a.file.Close(); err != nil {
			log.Warn("access log file", "error", err)
		}
	}
}
