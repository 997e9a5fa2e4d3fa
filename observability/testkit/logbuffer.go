package testkit

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
)

// LogBuffer is a log sink safe for concurrent writers (the code under
// test's goroutines) and readers (the test). The zero value is ready.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// NewLogger returns a logger writing every level, debug included, as text
// into a new LogBuffer.
func NewLogger() (*slog.Logger, *LogBuffer) {
	b := &LogBuffer{}
	return b.Logger(), b
}

// Logger returns a logger writing every level as text into b.
func (b *LogBuffer) Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// Write appends p.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Count is the number of times substr occurs in what was written.
func (b *LogBuffer) Count(substr string) int {
	return strings.Count(b.String(), substr)
}
