package observability

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Counters is a fixed family of int64 counters, one per attribute set,
// counted with atomic adds on the hot path and reported when a reader
// collects (an observable instrument whose callback reads them).
//
// Why: a synchronous instrument's Add walks the SDK's aggregation (the
// attribute set's map, the exemplar filter, which reads the span from the
// context) on every request, about half a microsecond each; these counters
// were three of a cached answer's four instrument calls. An atomic add is a
// few nanoseconds, and what is exported is the same cumulative sum.
// Exemplars are the cost: the hot counters carry none (the request
// duration histogram, still synchronous, does).
type Counters struct {
	slots []counterSlot
}

type counterSlot struct {
	n    atomic.Int64
	seen atomic.Bool // reported: from the first Add on, or from the start (NewCounters' reportAll)
	opt  []metric.ObserveOption
}

// CounterKind is the kind of instrument a Counters is reported as.
type CounterKind int

const (
	Monotonic CounterKind = iota // a counter: only ever added to
	UpDown                       // an up-down counter (in-flight requests)
)

// NewCounters registers the instrument name on meter (its unit and
// description as given) with one counter per attribute set of sets, in
// that order: Add(i, n) counts on sets[i]. A counter is reported from its
// first Add on, or from the start when reportAll is set (like a
// synchronous counter given Add(0) at start-up).
func NewCounters(meter metric.Meter, kind CounterKind, name, unit, description string, sets []attribute.Set, reportAll bool) (*Counters, error) {
	c := &Counters{slots: make([]counterSlot, len(sets))}
	for i, s := range sets {
		c.slots[i].opt = []metric.ObserveOption{metric.WithAttributeSet(s)}
		c.slots[i].seen.Store(reportAll)
	}
	var inst metric.Int64Observable
	var err error
	if kind == UpDown {
		inst, err = meter.Int64ObservableUpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(description))
	} else {
		inst, err = meter.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(description))
	}
	if err != nil {
		return nil, err
	}
	// RegisterCallback, not WithInt64Callback: families of the same name
	// (the caches of the live and sandbox PMSs) share the instrument, and
	// the SDK keeps only the first creation's callbacks.
	if _, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for i := range c.slots {
			if s := &c.slots[i]; s.seen.Load() {
				o.ObserveInt64(inst, s.n.Load(), s.opt...)
			}
		}
		return nil
	}, inst); err != nil {
		return nil, err
	}
	return c, nil
}

// Add adds n to counter i (an index into NewCounters' sets). For a
// Monotonic family n must not be negative.
func (c *Counters) Add(i int, n int64) {
	s := &c.slots[i]
	s.n.Add(n)
	if !s.seen.Load() {
		s.seen.Store(true)
	}
}
