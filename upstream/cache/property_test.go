package cache

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/partner-edge/partner-edge/upstream"
)

// 10,000 requests for random unknown ids leave the store's entry count
// unchanged (docs/resilience.md), with a fresh snapshot (which answers
// alone, the PMS is not asked) and without one (the PMS answers 404 each
// time and nothing is stored).
func TestUnknownIDsDoNotGrowTheCache(t *testing.T) {
	t.Run("warm snapshot", func(t *testing.T) {
		inner := newVersioned(5)
		c := New(inner, Config{Now: onTheDay(), TTL: time.Minute})
		defer c.Close()
		if _, err := c.Snapshot(context.Background()); err != nil {
			t.Fatal(err)
		}
		before := c.Len()
		for range 10_000 {
			if _, err := c.Property(context.Background(), uuid.NewString()); upstream.KindOf(err) != upstream.NotFound {
				t.Fatalf("err %v, want PROPERTY_NOT_FOUND", err)
			}
		}
		if c.Len() != before || inner.propCalls.Load() != 0 {
			t.Fatalf("Len %d -> %d, PMS asked %d times; want unchanged, 0", before, c.Len(), inner.propCalls.Load())
		}
	})
	t.Run("cold snapshot", func(t *testing.T) {
		inner := newVersioned(5)
		c := New(inner, Config{Now: onTheDay(), TTL: time.Minute})
		defer c.Close()
		if _, err := c.Property(context.Background(), propertyID(1)); err != nil {
			t.Fatal(err)
		}
		before := c.Len() // the cold get loaded the snapshot
		for range 10_000 {
			if _, err := c.Property(context.Background(), uuid.NewString()); upstream.KindOf(err) != upstream.NotFound {
				t.Fatalf("err %v, want PROPERTY_NOT_FOUND", err)
			}
		}
		if before != 5 || c.Len() != before {
			t.Fatalf("Len %d -> %d; want 5, unchanged", before, c.Len())
		}
		if inner.propCalls.Load() != 0 || inner.snapCalls.Load() != 1 {
			t.Fatalf("PMS asked %d gets and %d snapshots, want 0 and 1 (the snapshot answers)",
				inner.propCalls.Load(), inner.snapCalls.Load())
		}
	})
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
	inner.fail.Store(&upstream.Error{Kind: upstream.Unavailable, Err: errors.New("circuit open")})
	clk.Advance(59 * time.Second)
	got, err := c.Property(context.Background(), propertyID(3))
	if err != nil || !bytes.Equal(got.JSON, first.JSON) {
		t.Fatalf("%v; want the stale per-id item", err)
	}
	clk.Advance(time.Second)
	if _, err := c.Property(context.Background(), propertyID(3)); upstream.KindOf(err) != upstream.Unavailable {
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
	c := New(inner, Config{Now: onTheDay(), TTL: time.Second})
	defer c.Close()
	if _, err := c.Snapshot(context.Background()); upstream.KindOf(err) != upstream.Internal {
		t.Fatalf("snapshot: %v, want INTERNAL_ERROR", err)
	}
	if _, err := c.Property(context.Background(), propertyID(1)); upstream.KindOf(err) != upstream.Internal {
		t.Fatalf("property: %v, want INTERNAL_ERROR", err)
	}
	if c.Len() != 0 {
		t.Fatalf("Len %d, want 0", c.Len())
	}
}
