package cache

import (
	"context"
	"testing"
	"time"
)

// The zero Config is usable: TTL zero is the documented "no cache" (every
// call reads the inner catalog), and the other durations take their
// defaults; negative durations never mean a panic or an instant timeout
// (a negative Stale is raised to TTL, as the Config says) (docs/architecture.md).
func TestZeroAndNegativeConfig(t *testing.T) {
	for _, cfg := range []Config{{}, {TTL: -time.Second, Stale: -time.Second, LoadTimeout: -time.Second, RefreshAhead: -1, RefreshBackoff: -time.Second}} {
		inner := newVersioned(3)
		c := New(inner, cfg)
		if (cfg.Stale == 0 && c.cfg.Stale != DefaultStale) || c.cfg.LoadTimeout != DefaultLoadTimeout || c.cfg.RefreshBackoff != DefaultRefreshBackoff {
			t.Errorf("%+v: stale %v, load timeout %v, backoff %v; want the defaults", cfg, c.cfg.Stale, c.cfg.LoadTimeout, c.cfg.RefreshBackoff)
		}
		for range 2 {
			if _, err := c.Property(context.Background(), propertyID(1)); err != nil {
				t.Fatalf("%+v: %v", cfg, err)
			}
		}
		c.Close()
	}
}
