package cache

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/upstream"
)

// observeHandler calls on for every record logged.
type observeHandler struct{ on func(slog.Record) }

func (h observeHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h observeHandler) Handle(_ context.Context, r slog.Record) error {
	h.on(r)
	return nil
}
func (h observeHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h observeHandler) WithGroup(string) slog.Handler      { return h }

// A walk is told (its log line, its metrics) once its outcome is in
// place: an operator, or a test, that reads "pms walk finished" and then
// asks gets the walked snapshot, never a join of the walk still ending;
// and a failed walk's line comes once the back-off is set.
func TestWalkIsToldOnceItsOutcomeIsInPlace(t *testing.T) {
	inner := newVersioned(3)
	var c *Cache
	var finished, failed atomic.Int32
	var servedAtLine, failingAtLine atomic.Bool
	log := slog.New(observeHandler{on: func(r slog.Record) {
		switch r.Message {
		case "pms walk finished":
			finished.Add(1)
			servedAtLine.Store(c.cur.Load() != nil)
		case "pms walk failed; no snapshot to serve yet":
			failed.Add(1)
			failingAtLine.Store(c.failing())
		}
	}})
	clk := newClock()
	c = New(paging{inner}, Config{Key: "aurora/live", TTL: time.Hour, Now: clk.Now, Logger: log})
	defer c.Close()

	inner.fail.Store(&upstream.Error{Kind: upstream.BadGateway})
	if _, err := c.Snapshot(context.Background()); err == nil {
		t.Fatal("the failing walk served")
	}
	if failed.Load() != 1 || !failingAtLine.Load() {
		t.Fatalf("failed walk: %d lines, back-off set at its line: %v; want 1 line, set", failed.Load(), failingAtLine.Load())
	}
	inner.fail.Store(nil)
	clk.Advance(time.Hour) // past any back-off
	if _, err := c.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	if finished.Load() != 1 || !servedAtLine.Load() {
		t.Fatalf("walk: %d lines, serving at its line: %v; want 1 line, serving", finished.Load(), servedAtLine.Load())
	}
}

// paging is a catalogue whose snapshot loads count one PMS page, so the
// cache tells them as PMS walks.
type paging struct{ *versioned }

func (p paging) Snapshot(ctx context.Context) (*upstream.Snapshot, error) {
	if st := upstream.WalkStatsFrom(ctx); st != nil {
		st.Page(3)
	}
	return p.versioned.Snapshot(ctx)
}
