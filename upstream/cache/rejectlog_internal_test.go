package cache

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream"
)

// docs/operations.md, "What to watch": the same unmappable records walk after walk
// log nothing at WARN; records a walk newly rejects are WARN lines, at
// most NewRejectionsPerWalk, and all counted on the walk; rejections
// outside a walk (gets by id) are one WARN line a minute per reason.
func TestRejectLogIsSizedForABrand(t *testing.T) {
	var out bytes.Buffer
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	l := &rejectLog{log: slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	l.throttle.Now = func() time.Time { return now }
	warns := func() (n int) {
		for line := range strings.Lines(out.String()) {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["level"] == "WARN" {
				n++
			}
		}
		out.Reset()
		return n
	}
	walk := func(ids int, extra ...string) *upstream.WalkStats {
		st := &upstream.WalkStats{}
		ctx := upstream.WithWalkStats(context.Background(), st)
		for i := range ids {
			l.rejected(ctx, &mapping.Rejection{HotelID: fmt.Sprint("h", i), Reason: mapping.Reasons[i%len(mapping.Reasons)]})
		}
		for _, id := range extra {
			l.rejected(ctx, &mapping.Rejection{HotelID: id, Reason: mapping.Reasons[0]})
		}
		return st
	}

	if st := walk(2500); warns() != 0 || st.Newly() != 0 {
		t.Errorf("the first walk: WARN lines or %d newly rejected (nothing to tell them from)", st.Newly())
	}
	for range 3 {
		if st := walk(2500); warns() != 0 || st.Newly() != 0 {
			t.Errorf("the same records again: WARN lines or %d newly rejected", st.Newly())
		}
	}
	var fresh []string
	for i := range 20 {
		fresh = append(fresh, fmt.Sprint("new", i))
	}
	if st, n := walk(2500, fresh...), warns(); n != NewRejectionsPerWalk || st.Newly() != 20 {
		t.Errorf("20 newly rejected: %d WARN lines, %d counted; want %d lines, 20 counted", n, st.Newly(), NewRejectionsPerWalk)
	}
	if st := walk(2500, fresh...); warns() != 0 || st.Newly() != 0 {
		t.Errorf("the new ones a second time: WARN lines or %d newly rejected", st.Newly())
	}

	// Gets by id while no snapshot exists: one line a minute per reason.
	for i := range 100 {
		l.rejected(context.Background(), &mapping.Rejection{HotelID: fmt.Sprint("g", i), Reason: mapping.Reasons[0]})
	}
	if n := warns(); n != 1 {
		t.Errorf("100 rejected gets within a minute: %d WARN lines, want 1", n)
	}
	now = now.Add(observability.LogEvery)
	l.rejected(context.Background(), &mapping.Rejection{HotelID: "g", Reason: mapping.Reasons[0]})
	if !strings.Contains(out.String(), `"suppressed":99`) || warns() != 1 {
		t.Errorf("the line a minute later does not count the 99 left out")
	}
}

// A walk that fails is retried: its WARN line comes at most once a minute
// per error kind, whatever starts the walks.
func TestWalkFailedLoggedOnceAMinute(t *testing.T) {
	var out bytes.Buffer
	c := New(nil, Config{Now: onTheDay(), TTL: time.Hour, Key: "aurora/live",
		Logger: slog.New(slog.NewJSONHandler(&out, nil)),
		Load: func(context.Context) (*upstream.Snapshot, error) {
			return nil, &upstream.Error{Kind: upstream.BadGateway, Err: errors.New("pms: 500")}
		}})
	defer c.Close()
	for range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if _, err := c.Snapshot(ctx); err == nil {
			t.Fatal("a failing walk served a snapshot")
		}
		cancel()
	}
	if n := strings.Count(out.String(), `"msg":"pms walk failed`); n != 1 {
		t.Errorf("%d lines for failed walks within a minute, want 1:\n%s", n, out.String())
	}
}
