package pms

import (
	"context"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream"
)

// The zero ClientConfig (but its BaseURL) is usable: every size and
// duration takes its documented default, so nothing panics and every
// bound holds (docs/architecture.md).
func TestZeroClientConfigUsesDefaults(t *testing.T) {
	f := newFakePMS(t, hotels(2, "aurora"))
	// Now too is left nil: its default (time.Now) is part of what is
	// tested, and nothing here is dated.
	c, err := NewClient(ClientConfig{BaseURL: f.srv.URL, Now: nil})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	if _, err := c.GetHotel(context.Background(), "aurora", hotelID(1)); err != nil {
		t.Fatalf("get: %v", err)
	}
	if got, err := listHotels(c, context.Background(), "aurora"); err != nil || len(got) != 2 {
		t.Fatalf("list: %d records, %v", len(got), err)
	}
	cfg, _, err := ClientConfig{BaseURL: f.srv.URL, Now: nil}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct {
		name      string
		got, want int64
	}{
		{"PageSize", int64(cfg.PageSize), DefaultPageSize},
		{"MaxPages", int64(cfg.MaxPages), DefaultMaxPages},
		{"MaxBodyBytes", cfg.MaxBodyBytes, DefaultMaxBodyBytes},
		{"CallTimeout", int64(cfg.CallTimeout), int64(DefaultCallTimeout)},
		{"WalkTimeout", int64(cfg.WalkTimeout), int64(upstream.DefaultWalkTimeout)},
		{"AttemptTimeout", int64(cfg.AttemptTimeout), int64(DefaultAttemptTimeout)},
		{"Retry.MaxRetries", int64(cfg.Retry.MaxRetries), DefaultMaxRetries},
		{"Retry.WaitMin", int64(cfg.Retry.WaitMin), int64(DefaultRetryWaitMin)},
		{"Retry.WaitMax", int64(cfg.Retry.WaitMax), int64(DefaultRetryWaitMax)},
		{"Retry.RetryAfterMax", int64(cfg.Retry.RetryAfterMax), int64(DefaultRetryAfterMax)},
		{"Breaker.Window", int64(cfg.Breaker.Window), int64(DefaultBreakerWindow)},
		{"Breaker.BucketPeriod", int64(cfg.Breaker.BucketPeriod), int64(DefaultBreakerBucketPeriod)},
		{"Breaker.OpenTimeout", int64(cfg.Breaker.OpenTimeout), int64(DefaultBreakerOpenTimeout)},
	} {
		if d.got != d.want {
			t.Errorf("zero %s became %d, want the default %d", d.name, d.got, d.want)
		}
	}
	if cfg.Retry.Budget == nil || cfg.Logger == nil || cfg.Transport == nil || cfg.Tracer == nil || cfg.Now == nil {
		t.Errorf("a nil dependency stayed nil: %+v", cfg)
	}
}

// A negative size or duration is refused with an error naming it.
func TestNegativeClientConfigRefused(t *testing.T) {
	for name, edit := range map[string]func(*ClientConfig){
		"PageSize":             func(c *ClientConfig) { c.PageSize = -1 },
		"MaxPages":             func(c *ClientConfig) { c.MaxPages = -1 },
		"MaxBodyBytes":         func(c *ClientConfig) { c.MaxBodyBytes = -1 },
		"CallTimeout":          func(c *ClientConfig) { c.CallTimeout = -time.Second },
		"WalkTimeout":          func(c *ClientConfig) { c.WalkTimeout = -time.Second },
		"AttemptTimeout":       func(c *ClientConfig) { c.AttemptTimeout = -time.Second },
		"Retry.WaitMin":        func(c *ClientConfig) { c.Retry.WaitMin = -time.Second },
		"Retry.WaitMax":        func(c *ClientConfig) { c.Retry.WaitMax = -time.Second },
		"Retry.RetryAfterMax":  func(c *ClientConfig) { c.Retry.RetryAfterMax = -time.Second },
		"Breaker.Window":       func(c *ClientConfig) { c.Breaker.Window = -time.Second },
		"Breaker.BucketPeriod": func(c *ClientConfig) { c.Breaker.BucketPeriod = -time.Second },
		"Breaker.OpenTimeout":  func(c *ClientConfig) { c.Breaker.OpenTimeout = -time.Second },
	} {
		cfg := ClientConfig{BaseURL: "http://127.0.0.1:1", Now: testkit.From(testkit.Epoch)}
		edit(&cfg)
		if _, err := NewClient(cfg); err == nil {
			t.Errorf("negative %s: client made, want an error", name)
		}
	}
}
