package cache

import (
	"context"
	"testing"
	"time"
)

// The hit path is one go-cache read and a time comparison; it must not
// allocate (run with -benchmem: 0 allocs/op expected).
func BenchmarkSnapshotHit(b *testing.B) {
	c := New(newVersioned(100), Config{Now: onTheDay(), Key: "aurora/live", TTL: time.Hour})
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Snapshot(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Snapshot(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Property answered from a fresh snapshot (the common case).
func BenchmarkPropertyHit(b *testing.B) {
	c := New(newVersioned(100), Config{Now: onTheDay(), Key: "aurora/live", TTL: time.Hour})
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Snapshot(ctx); err != nil {
		b.Fatal(err)
	}
	id := propertyID(42)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Property(ctx, id); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Property answered from its per-id entry (no snapshot stored): one
// allocation, the entry's key.
func BenchmarkPropertyHitPerID(b *testing.B) {
	c := New(newVersioned(100), Config{Now: onTheDay(), Key: "aurora/live", TTL: time.Hour})
	defer c.Close()
	ctx := context.Background()
	id := propertyID(42)
	if _, err := c.Property(ctx, id); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Property(ctx, id); err != nil {
				b.Fatal(err)
			}
		}
	})
}
