package observability

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// What telemetry loses is counted (docs/contract.md section 22,
// "Errors are kept, storms are summarised"; docs/observability.md,
// "When telemetry fails"): a trace the keep rate left out
// (partner_edge_traces_unkept_total{reason}) and a span the SDK dropped
// (partner_edge_spans_dropped_total{reason}). Both are atomic adds, read
// when metrics are collected.

// Reasons of partner_edge.traces.unkept: the outcome that would have
// kept the trace (AttrKeptBy's values).
const (
	unkeptError = iota // a 5xx
	unkeptSlow         // slower than Config.KeepSlowerThan
	unkeptWalk         // a walk of the PMS (KeepWalk)
)

// Reasons of partner_edge.spans.dropped.
const (
	droppedQueueFull    = iota // the exporter's queue was full
	droppedExportFailed        // the export failed (backend away, refused, timed out)
)

// loss holds the two families.
type loss struct {
	unkept  *Counters
	dropped *Counters
}

func newLoss(meter metric.Meter) (*loss, error) {
	sets := func(reasons ...string) []attribute.Set {
		out := make([]attribute.Set, len(reasons))
		for i, r := range reasons {
			out[i] = attribute.NewSet(attribute.String("reason", r))
		}
		return out
	}
	unkept, err := NewCounters(meter, Monotonic, "partner_edge.traces.unkept", "{trace}",
		"Traces a 5xx or slow answer, or a walk, would have kept, left out by the keep rate (EDGE_TRACE_KEEP_RATE), by reason: error, slow or walk.",
		sets("error", "slow", "walk"), true)
	if err != nil {
		return nil, err
	}
	dropped, err := NewCounters(meter, Monotonic, "partner_edge.spans.dropped", "{span}",
		"Spans of kept traces the SDK dropped, by reason: queue_full (the export queue) or export_failed.",
		sets("queue_full", "export_failed"), true)
	if err != nil {
		return nil, err
	}
	return &loss{unkept: unkept, dropped: dropped}, nil
}

// defaultQueueSize is the SDK's OTEL_BSP_MAX_QUEUE_SIZE default.
const defaultQueueSize = 2048

// newCountingBatcher is the SDK's batch span processor for exp, with the
// spans it drops counted: the SDK counts neither those it drops when its
// queue is full nor those of a failed export. A gate in front of it
// (countingBatcher) holds at most the queue's size (OTEL_BSP_MAX_QUEUE_SIZE)
// of spans not yet handed to the exporter and drops, counting, beyond it;
// behind it, the exporter counts the spans of a failed export. The
// processor is made blocking, which never blocks: the gate leaves room.
func newCountingBatcher(exp sdktrace.SpanExporter, getenv func(string) string, l *loss) (sdktrace.SpanProcessor, error) {
	size := defaultQueueSize
	if v := strings.TrimSpace(getenv("OTEL_BSP_MAX_QUEUE_SIZE")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("OTEL_BSP_MAX_QUEUE_SIZE=%q: want a positive whole number", v)
		}
		size = n
	}
	b := &countingBatcher{max: int64(size), loss: l}
	b.next = sdktrace.NewBatchSpanProcessor(countingExporter{next: exp, b: b},
		sdktrace.WithMaxQueueSize(size), sdktrace.WithBlocking())
	return b, nil
}

// countingBatcher is the gate of newCountingBatcher.
type countingBatcher struct {
	next    sdktrace.SpanProcessor
	max     int64
	pending atomic.Int64 // spans handed to next, not yet to the exporter
	loss    *loss
}

func (b *countingBatcher) OnStart(ctx context.Context, s sdktrace.ReadWriteSpan) {
	b.next.OnStart(ctx, s)
}

func (b *countingBatcher) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return // the batcher exports only sampled spans
	}
	if b.pending.Add(1) > b.max {
		b.pending.Add(-1)
		b.loss.dropped.Add(droppedQueueFull, 1)
		return
	}
	b.next.OnEnd(s)
}

func (b *countingBatcher) Shutdown(ctx context.Context) error   { return b.next.Shutdown(ctx) }
func (b *countingBatcher) ForceFlush(ctx context.Context) error { return b.next.ForceFlush(ctx) }

// countingExporter counts, for the gate, the spans that reached the
// exporter, and those whose export failed.
type countingExporter struct {
	next sdktrace.SpanExporter
	b    *countingBatcher
}

func (e countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.b.pending.Add(-int64(len(spans)))
	err := e.next.ExportSpans(ctx, spans)
	if err != nil {
		e.b.loss.dropped.Add(droppedExportFailed, int64(len(spans)))
	}
	return err
}

func (e countingExporter) Shutdown(ctx context.Context) error { return e.next.Shutdown(ctx) }
