package observability_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/partner-edge/partner-edge/observability"
)

// sink records each Write call the LogBuffer makes to its output.
type sink struct {
	mu     sync.Mutex
	writes []string
	gate   chan struct{} // non-nil: each Write waits for a value (a stalled output)
	err    error
}

func (s *sink) Write(p []byte) (int, error) {
	if s.gate != nil {
		<-s.gate
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return 0, s.err
	}
	s.writes = append(s.writes, string(p))
	return len(p), nil
}

func (s *sink) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.writes, "")
}

func (s *sink) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.writes)
}

func line(i int) []byte { return fmt.Appendf(nil, "line %04d\n", i) } // 10 bytes

// A line waits in a partly filled buffer until the flush clock ticks, and
// no longer: the default clock (a time.Ticker) under synctest's fake time.
func TestLogBufferFlushesEverySecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &sink{}
		b := observability.NewLogBuffer(out, observability.LogBufferConfig{})
		defer b.Close(t.Context())
		b.Write(line(1))
		synctest.Wait()
		time.Sleep(999 * time.Millisecond)
		synctest.Wait()
		if out.calls() != 0 {
			t.Fatalf("written before the second passed: %q", out.text())
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got := out.text(); got != string(line(1)) {
			t.Fatalf("after 1 s the output holds %q, want the line", got)
		}
		// The next line waits for the next tick, one second later.
		b.Write(line(2))
		time.Sleep(500 * time.Millisecond)
		synctest.Wait()
		if out.calls() != 1 {
			t.Fatalf("second line written before its tick")
		}
		time.Sleep(500 * time.Millisecond)
		synctest.Wait()
		if out.calls() != 2 || out.text() != string(line(1))+string(line(2)) {
			t.Fatalf("after 2 s: %d writes, %q", out.calls(), out.text())
		}
	})
}

// FlushInterval sets the clock: each tick writes what is buffered, and a
// tick with nothing buffered writes nothing.
func TestLogBufferFlushInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &sink{}
		b := observability.NewLogBuffer(out, observability.LogBufferConfig{FlushInterval: 250 * time.Millisecond})
		b.Write(line(1))
		b.Write(line(2))
		time.Sleep(249 * time.Millisecond)
		synctest.Wait()
		if out.calls() != 0 {
			t.Fatal("written before the tick")
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got := out.text(); got != string(line(1))+string(line(2)) || out.calls() != 1 {
			t.Fatalf("after a tick: %d writes, %q", out.calls(), got)
		}
		time.Sleep(250 * time.Millisecond) // nothing buffered: no empty write
		synctest.Wait()
		if out.calls() != 1 {
			t.Errorf("an empty buffer was written")
		}
		if err := b.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

// A full buffer is written at once, in one Write, without waiting for the
// clock; lines are never split across writes and keep their order.
func TestLogBufferWritesFullBuffers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &sink{}
		b := observability.NewLogBuffer(out, observability.LogBufferConfig{ChunkSize: 35, FlushInterval: time.Hour})
		defer b.Close(t.Context())
		for i := range 7 {
			b.Write(line(i))
		}
		synctest.Wait()
		// 3 lines fill a 35-byte buffer; the 4th and 7th rotated one out.
		if out.calls() != 2 {
			t.Fatalf("%d writes, want 2: %q", out.calls(), out.writes)
		}
		out.mu.Lock()
		for _, w := range out.writes {
			if len(w) != 30 {
				t.Errorf("write %q: want three whole lines", w)
			}
		}
		out.mu.Unlock()
		time.Sleep(time.Hour) // the flush clock
		synctest.Wait()
		var want bytes.Buffer
		for i := range 7 {
			want.Write(line(i))
		}
		if out.text() != want.String() {
			t.Errorf("output %q, want %q", out.text(), want.String())
		}
	})
}

// A slow log output (bench/README.md, AccessLogSlowOutput), the writer's half: an output that does not
// keep up never blocks Write; lines that find no room are dropped and
// counted; once the output moves again, the buffered lines are written in
// order and written+dropped accounts for every line.
func TestLogBufferDropsWhenOutputStalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &sink{gate: make(chan struct{})}
		b := observability.NewLogBuffer(out, observability.LogBufferConfig{ChunkSize: 100, Chunks: 3, FlushInterval: time.Hour})
		const n = 1000
		for i := range n { // would deadlock the bubble if Write waited on the output
			b.Write(line(i))
		}
		synctest.Wait()
		// One buffer is stuck in the output's Write, one queued, one filling:
		// 30 lines held, the rest dropped.
		if got := b.Dropped(); got != n-30 {
			t.Errorf("dropped %d, want %d", got, n-30)
		}
		go func() {
			for range 3 {
				out.gate <- struct{}{}
			}
		}()
		if err := b.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		if written := int64(strings.Count(out.text(), "\n")); written+b.Dropped() != n || written != 30 {
			t.Errorf("written %d + dropped %d, want 30 + %d", written, b.Dropped(), n-30)
		}
		if !strings.HasPrefix(out.text(), string(line(0))+string(line(1))) {
			t.Errorf("the first lines were not kept first: %.40q", out.text())
		}
		b.Write(line(n))
		if b.Dropped() != n-30+1 {
			t.Errorf("a line after Close was not dropped")
		}
	})
}

// Close writes what is buffered and ends the goroutine (synctest would
// report it leaked otherwise); a line longer than a buffer and the lines of
// a failed output write are counted as dropped.
func TestLogBufferCloseAndFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &sink{}
		b := observability.NewLogBuffer(out, observability.LogBufferConfig{ChunkSize: 64, FlushInterval: time.Hour})
		b.Write(line(1))
		b.Write(bytes.Repeat([]byte("x"), 65))
		if b.Dropped() != 1 {
			t.Errorf("oversized line: dropped %d", b.Dropped())
		}
		if err := b.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		if out.text() != string(line(1)) {
			t.Errorf("Close wrote %q", out.text())
		}
		if err := b.Close(t.Context()); err != nil {
			t.Errorf("second Close: %v", err)
		}

		failing := &sink{err: errors.New("disk full")}
		b = observability.NewLogBuffer(failing, observability.LogBufferConfig{FlushInterval: time.Hour})
		b.Write(line(1))
		b.Write(line(2))
		time.Sleep(time.Hour) // the flush clock
		synctest.Wait()
		if b.Dropped() != 2 || failing.calls() != 0 {
			t.Errorf("failed write: dropped %d, written %d", b.Dropped(), failing.calls())
		}
		b.Close(t.Context())
	})
}

// Close is bounded by its context when the output blocks for ever.
func TestLogBufferCloseBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &sink{gate: make(chan struct{})}
		b := observability.NewLogBuffer(out, observability.LogBufferConfig{})
		b.Write(line(1))
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		if err := b.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Close on a stuck output: %v", err)
		}
		close(out.gate) // let the goroutine end before the bubble does
		if err := b.Close(t.Context()); err != nil {
			t.Error(err)
		}
	})
}

// Many writers at once: every line is either written whole or counted.
func TestLogBufferConcurrentWriters(t *testing.T) {
	out := &sink{}
	b := observability.NewLogBuffer(out, observability.LogBufferConfig{ChunkSize: 512, Chunks: 2})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 500 {
				b.Write(line(w*1000 + i))
			}
		})
	}
	wg.Wait()
	if err := b.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	text := out.text()
	lines := strings.Count(text, "\n")
	if int64(lines)+b.Dropped() != 4000 {
		t.Errorf("%d lines out, dropped %d", lines, b.Dropped())
	}
	for l := range strings.Lines(text) {
		if len(l) != 10 || !strings.HasPrefix(l, "line ") {
			t.Fatalf("torn line %q", l)
		}
	}
}

// The dropped lines reach the metric partner_edge.log.dropped.
func TestObserveLogBuffer(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	b := observability.NewLogBuffer(&sink{}, observability.LogBufferConfig{ChunkSize: 16})
	defer b.Close(t.Context())
	if err := observability.ObserveLogBuffer(mp, "access", b); err != nil {
		t.Fatal(err)
	}
	b.Write(bytes.Repeat([]byte("x"), 17))
	b.Write(bytes.Repeat([]byte("x"), 17))
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "partner_edge.log.dropped" {
				continue
			}
			sum := m.Data.(metricdata.Sum[int64])
			if !sum.IsMonotonic || len(sum.DataPoints) != 1 || sum.DataPoints[0].Value != 2 {
				t.Fatalf("partner_edge.log.dropped: %+v", sum)
			}
			if v, _ := sum.DataPoints[0].Attributes.Value("log"); v.AsString() != "access" {
				t.Errorf("attribute log = %q", v.AsString())
			}
			return
		}
	}
	t.Fatal("no partner_edge.log.dropped")
}
