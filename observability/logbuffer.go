package observability

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// LogBufferConfig configures NewLogBuffer. The zero value is nginx's
// `access_log ... buffer=64k flush=1s` with four buffers.
type LogBufferConfig struct {
	// ChunkSize is the size of one buffer, in bytes: lines are gathered into
	// it and written with one Write call when it is full. Zero: 64 KiB. A
	// line longer than ChunkSize is dropped (and counted).
	ChunkSize int

	// Chunks is how many buffers exist, so the memory held is at most
	// Chunks*ChunkSize. While one is being written the others take lines;
	// when every one is full the output is not keeping up and new lines are
	// dropped, never waited for. Zero: 4. At least 2.
	Chunks int

	// FlushInterval bounds how long a line waits in a buffer that is not
	// full. Zero: 1 s.
	FlushInterval time.Duration
}

// LogBuffer is an io.Writer for log lines that never blocks its caller on
// the output: Write copies the line into a bounded buffer and returns; one
// goroutine (started by NewLogBuffer, ended by Close) writes full buffers,
// and a partly filled one at least every FlushInterval. When the output is
// slower than the lines coming in and every buffer is full, Write drops the
// line and counts it (Dropped).
//
// Each Write must be one whole line (or several): slog handlers call Write
// once per record, so a line is never split between two output writes.
// Safe for concurrent use.
type LogBuffer struct {
	out   io.Writer
	chunk int

	mu     sync.Mutex
	cur    *chunk // guarded by mu
	closed bool   // guarded by mu

	free chan *chunk // empty buffers
	full chan *chunk // buffers waiting to be written, in order
	stop chan struct{}
	done chan struct{}

	dropped atomic.Int64
}

type chunk struct {
	b     []byte
	lines int64
}

// NewLogBuffer starts a LogBuffer writing to out (for example os.Stdout or
// a file). Close it to write what is left and end its goroutine.
func NewLogBuffer(out io.Writer, cfg LogBufferConfig) *LogBuffer {
	if cfg.ChunkSize <= 0 {
		cfg.ChunkSize = 64 << 10
	}
	if cfg.Chunks < 2 {
		cfg.Chunks = 4
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = time.Second
	}
	b := &LogBuffer{out: out, chunk: cfg.ChunkSize, free: make(chan *chunk, cfg.Chunks),
		full: make(chan *chunk, cfg.Chunks), stop: make(chan struct{}), done: make(chan struct{})}
	b.cur = &chunk{b: make([]byte, 0, cfg.ChunkSize)}
	for range cfg.Chunks - 1 {
		b.free <- &chunk{b: make([]byte, 0, cfg.ChunkSize)}
	}
	go b.run(time.NewTicker(cfg.FlushInterval))
	return b
}

// Write takes one or more whole lines. It never blocks on the output and
// never fails: a line that finds no room is dropped and counted. It
// returns len(p), so a logger never sees an error from a slow output.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	taken := len(p) <= b.chunk && !b.closed && (len(b.cur.b)+len(p) <= cap(b.cur.b) || b.rotate())
	if taken {
		b.cur.b = append(b.cur.b, p...)
		b.cur.lines++
	}
	b.mu.Unlock()
	if !taken {
		b.dropped.Add(1)
	}
	return len(p), nil
}

// rotate hands the current buffer to the writer and takes an empty one;
// false when none is free (the output is behind). Called with mu held.
func (b *LogBuffer) rotate() bool {
	select {
	case next := <-b.free:
		b.full <- b.cur // never blocks: full has room for every buffer
		b.cur = next
		return true
	default:
		return false
	}
}

// Dropped is the number of lines dropped so far: no buffer was free (the
// output was behind), the line was longer than a buffer, the output's
// Write failed, or the LogBuffer was closed.
func (b *LogBuffer) Dropped() int64 { return b.dropped.Load() }

// Close stops taking lines (later ones are dropped and counted), writes
// what is buffered and ends the goroutine. It returns ctx.Err when ctx ends
// first (an output that blocks for ever), else nil. Later calls wait the
// same way.
func (b *LogBuffer) Close(ctx context.Context) error {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.stop)
	}
	b.mu.Unlock()
	select {
	case <-b.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run is the writer goroutine.
func (b *LogBuffer) run(tick *time.Ticker) {
	defer close(b.done)
	defer tick.Stop()
	for {
		select {
		case c := <-b.full:
			b.write(c)
		case <-tick.C:
			b.drain()
		case <-b.stop:
			b.drain()
			return
		}
	}
}

// drain writes every line taken before it was called: the full buffers,
// then the current one. When no buffer is free to replace the current one,
// all the others are queued as full, so writing the first of them frees
// one.
func (b *LogBuffer) drain() {
	b.mu.Lock()
	var target *chunk
	if len(b.cur.b) > 0 {
		target = b.cur
		b.rotate()
	}
	n := len(b.full)
	b.mu.Unlock()
	for i := 0; target != nil || i < n; i++ { // to target, or the n full ones
		c := <-b.full
		b.write(c)
		if c == target {
			return
		}
		b.mu.Lock()
		if b.cur == target {
			b.rotate()
		}
		b.mu.Unlock()
	}
}

func (b *LogBuffer) write(c *chunk) {
	if _, err := b.out.Write(c.b); err != nil { // the lines are lost: count them with the dropped ones
		b.dropped.Add(c.lines)
	}
	c.b, c.lines = c.b[:0], 0
	b.free <- c
}

// ObserveLogBuffer reports b's dropped lines as the counter
// partner_edge.log.dropped (Prometheus partner_edge_log_dropped_total, unit
// {line}; attribute log, the stream's name: "access"). It is read when
// metrics are collected, so a dropped line costs the request path nothing
// but an atomic add.
func ObserveLogBuffer(mp metric.MeterProvider, name string, b *LogBuffer) error {
	meter := mp.Meter(ScopeName)
	set := attribute.NewSet(attribute.String("log", name))
	_, err := meter.Int64ObservableCounter("partner_edge.log.dropped",
		metric.WithUnit("{line}"),
		metric.WithDescription("Log lines dropped because the output could not keep up (or failed), by log stream."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(b.Dropped(), metric.WithAttributeSet(set))
			return nil
		}))
	return err
}
