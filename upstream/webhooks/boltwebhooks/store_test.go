package boltwebhooks_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/upstream/webhooks"
	"github.com/partner-edge/partner-edge/upstream/webhooks/boltwebhooks"
	"github.com/partner-edge/partner-edge/upstream/webhooks/webhookstest"
)

func open(t *testing.T, dir string) *boltwebhooks.Store {
	t.Helper()
	s, err := boltwebhooks.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestContract: the file answers as every store must
// (webhookstest.StoreContract).
func TestContract(t *testing.T) {
	webhookstest.StoreContract(t, func(t *testing.T) webhooks.Registry { return open(t, t.TempDir()) })
}

// TestReopenKeepsEndpointsAndProgress: what was written is there after the
// file is closed and opened again, as after a restart; the file is
// private.
func TestReopenKeepsEndpointsAndProgress(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)
	a, b, c := webhookstest.Endpoint("key_a", 1), webhookstest.Endpoint("key_b", 2), webhookstest.Endpoint("key_a", 3)
	for _, ep := range []webhooks.Endpoint{a, b, c} {
		if err := s.Create(ctx, ep); err != nil {
			t.Fatal(err)
		}
	}
	a.Progress = webhooks.Progress{After: "evt_5", Failures: 2, NextAttempt: a.CreatedAt.Add(5 * time.Minute)}
	if err := s.SetProgress(ctx, a.ID, "evt_0", a.Progress); err != nil {
		t.Fatal(err)
	}
	if err := s.Disable(ctx, b.ID, "evt_0", "http_410", b.CreatedAt.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, dir)
	eps, err := s.Endpoints(ctx)
	if err != nil || len(eps) != 2 {
		t.Fatalf("after reopening: %d endpoints, %v", len(eps), err)
	}
	a.Status = webhooks.StatusEnabled
	b.Status, b.DisabledReason, b.DisabledAt = webhooks.StatusDisabled, "http_410", b.CreatedAt.Add(time.Hour)
	for i, want := range []webhooks.Endpoint{a, b} {
		if d := webhookstest.Same(eps[i], want); d != "" {
			t.Errorf("endpoint %d after reopening: %s", i, d)
		}
	}
	// The compare and set goes on from the positions kept.
	if err := s.SetProgress(ctx, a.ID, "evt_5", webhooks.Progress{After: "evt_6"}); err != nil {
		t.Fatal(err)
	}
	// A new endpoint is listed after the old ones: the order outlives it.
	d := webhookstest.Endpoint("key_a", 0)
	if err := s.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	if l, _ := s.List(ctx, "key_a"); len(l) != 2 || l[0].ID != a.ID || l[1].ID != d.ID {
		t.Fatalf("key_a after reopening: %+v", l)
	}
	st, err := os.Stat(filepath.Join(dir, boltwebhooks.FileName))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the file: %v, %v; want private (0600)", st, err)
	}
}

// TestOneEdgePerDirectory: a second open of the same file (another edge on
// the same data directory) is refused, naming why.
func TestOneEdgePerDirectory(t *testing.T) {
	dir := t.TempDir()
	open(t, dir)
	if _, err := boltwebhooks.Open(dir); err == nil || !strings.Contains(err.Error(), "one edge per data directory") {
		t.Fatalf("a second open: %v", err)
	}
}
