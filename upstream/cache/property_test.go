package cache

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/partner-edge/partner-edge/problem"
	"github.com/partner-edge/partner-edge/upstream"
)

// 10,000 requests for random unknown ids leave the store's entry count
// unchanged (issue 3, acceptance 6), with a fresh snapshot (which answers
// alone, the PMS is not asked) and without one (the PMS answers 404 each
// time and nothing is stored).
func TestUnknownIDsDoNotGrowTheCache(t *testing.T) {
	t.Run("warm snapshot", func(t *testing.T) {
		inner := newVersioned(5)
		c := New(inner, Config{TTL: time.Minute})
		defer c.Close()
		if _, err := c.Snapshot(context.Background()); err != nil {
			t.Fatal(err)
		}
		before := c.Len()
		for range 10_000 {
			if _, err := c.Property(context.Background(), uuid.NewString()); codeOf(err) != problem.PropertyNotFound {
				t.Fatalf("err %v, want PROPERTY_NOT_FOUND", err)
			}
		}
		if c.Len() != before || inner.propCalls.Load() != 0 {
			t.Fatalf("Len %d -> %d, PMS asked %d times; want unchanged, 0", before, c.Len(), inner.propCalls.Load())
		}
	})
	t.Run("cold snapshot", func(t *testing.T) {
		inner := newVersioned(5)
		c := New(inner, Config{TTL: time.Minute})
		defer c.Close()
		if _, err := c.Property(context.Background(), propertyID(1)); err != nil {
			t.Fatal(err)
		}
		before := c.Len()
		for range 10_000 {
			if _, err := c.Property(context.Background(), uuid.NewString()); codeOf(err) != problem.PropertyNotFound {
				t.Fatalf("err %v, want PROPERTY_NOT_FOUND", err)
			}
		}
		if before != 1 || c.Len() != before {
			t.Fatalf("Len %d -> %d; want 1, unchanged", before, c.Len())
		}
		if inner.propCalls.Load() != 10_001 {
			t.Fatalf("PMS asked %d times, want 10001 (not-found is never cached)", inner.propCalls.Load())
		}
	})
}

func TestPropertyFromFreshSnapshot(t *testing.T) {
	inner := newVersioned(5)
	clk := newClock()
	c := New(inner, Config{TTL: 30 * time.Second, RefreshAhead: 1, Now: clk.Now})
	defer c.Close()
	s, err := c.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want, _ := s.Get(propertyID(2))
	got, err := c.Property(context.Background(), propertyID(2))
	if err != nil || got != want || inner.propCalls.Load() != 0 {
		t.Fatalf("got %v, %v, PMS asked %d; want the snapshot's item without asking", got, err, inner.propCalls.Load())
	}

	// Past TTL the snapshot no longer answers; the id is loaded and stored.
	clk.Advance(30 * time.Second)
	got, err = c.Property(context.Background(), propertyID(2))
	if err != nil || got == want || inner.propCalls.Load() != 1 || c.Len() != 2 {
		t.Fatalf("after TTL: %v, PMS asked %d, Len %d; want a per-id load, stored", err, inner.propCalls.Load(), c.Len())
	}
	again, err := c.Property(context.Background(), propertyID(2))
	if err != nil || again != got || inner.propCalls.Load() != 1 {
		t.Fatalf("per-id hit: %v, PMS asked %d; want the stored item", err, inner.propCalls.Load())
	}
}

func TestPropertyStaleOnPMSFailure(t *testing.T) {
	for _, code := range []problem.Code{problem.BadGateway, problem.ServiceUnavailable, problem.GatewayTimeout} {
		t.Run(string(code), func(t *testing.T) {
			inner := newVersioned(5)
			clk := newClock()
			start := clk.Now()
			var out outcomes
			c := New(inner, Config{TTL: 30 * time.Second, Stale: 5 * time.Minute, RefreshAhead: 1, Now: clk.Now, OnOutcome: out.record})
			defer c.Close()
			ctx := context.Background()

			// Property 1 comes from a per-id load at start, property 2 from
			// a snapshot a minute later; property 1 is then newer in the
			// snapshot, and the newer copy is served.
			fromID, err := c.Property(ctx, propertyID(1))
			if err != nil {
				t.Fatal(err)
			}
			clk.Set(start.Add(time.Minute))
			snap, err := c.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			inner.fail.Store(problem.New(code, "pms down"))

			clk.Set(start.Add(time.Minute + 5*time.Minute - time.Millisecond))
			one, err := c.Property(ctx, propertyID(1))
			want1, _ := snap.Get(propertyID(1))
			if err != nil || !bytes.Equal(one.JSON, want1.JSON) || bytes.Equal(one.JSON, fromID.JSON) {
				t.Fatalf("stale property 1: %v; want the snapshot's (newer) copy", err)
			}
			// An id no stored data holds gets the PMS error, not a 404.
			if _, err := c.Property(ctx, uuid.NewString()); codeOf(err) != code {
				t.Fatalf("unknown id during outage: %v, want %s", err, code)
			}
			if out.get(OutcomeStale) != 1 {
				t.Fatalf("outcomes %v, want 1 stale", out.n)
			}

			clk.Set(start.Add(6 * time.Minute))
			if _, err := c.Property(ctx, propertyID(1)); codeOf(err) != code {
				t.Fatalf("past Stale: %v, want %s", err, code)
			}
		})
	}
}

func TestPropertyStaleFromPerIDEntry(t *testing.T) {
	inner := newVersioned(5)
	clk := newClock()
	c := New(inner, Config{TTL: time.Second, Stale: time.Minute, Now: clk.Now})
	defer c.Close()
	first, err := c.Property(context.Background(), propertyID(3))
	if err != nil {
		t.Fatal(err)
	}
	inner.fail.Store(problem.New(problem.ServiceUnavailable, "circuit open"))
	clk.Advance(59 * time.Second)
	got, err := c.Property(context.Background(), propertyID(3))
	if err != nil || !bytes.Equal(got.JSON, first.JSON) {
		t.Fatalf("%v; want the stale per-id item", err)
	}
	clk.Advance(time.Second)
	if _, err := c.Property(context.Background(), propertyID(3)); codeOf(err) != problem.ServiceUnavailable {
		t.Fatalf("past Stale: %v, want SERVICE_UNAVAILABLE", err)
	}
}

// A nil answer without an error (a broken inner Catalog) is never stored
// or served.
func TestNilAnswersAreInternalErrors(t *testing.T) {
	inner := &fakeCatalog{
		snapshot: func(context.Context) (*upstream.Snapshot, error) { return nil, nil },
		property: func(context.Context, string) (*upstream.Item, error) { return nil, nil },
	}
	c := New(inner, Config{TTL: time.Second})
	defer c.Close()
	if _, err := c.Snapshot(context.Background()); codeOf(err) != problem.InternalError {
		t.Fatalf("snapshot: %v, want INTERNAL_ERROR", err)
	}
	if _, err := c.Property(context.Background(), propertyID(1)); codeOf(err) != problem.InternalError {
		t.Fatalf("property: %v, want INTERNAL_ERROR", err)
	}
	if c.Len() != 0 {
		t.Fatalf("Len %d, want 0", c.Len())
	}
}
