package webhooks_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

func TestMemoryCreateLimits(t *testing.T) {
	ctx := context.Background()
	var m webhooks.Memory
	for i := range webhooks.MaxPerKey {
		ep := webhooks.Endpoint{ID: fmt.Sprintf("whe_%d", i), KeyID: "key_a", URL: fmt.Sprintf("https://p.example/%d", i)}
		if err := m.Create(ctx, ep); err != nil {
			t.Fatalf("endpoint %d: %v", i+1, err)
		}
	}
	if err := m.Create(ctx, webhooks.Endpoint{ID: "whe_x", KeyID: "key_a", URL: "https://p.example/0"}); !errors.Is(err, webhooks.ErrExists) {
		t.Errorf("the same url again: %v, want ErrExists", err)
	}
	if err := m.Create(ctx, webhooks.Endpoint{ID: "whe_x", KeyID: "key_a", URL: "https://p.example/x"}); !errors.Is(err, webhooks.ErrLimit) {
		t.Errorf("an eleventh: %v, want ErrLimit", err)
	}
	if err := m.Create(ctx, webhooks.Endpoint{ID: "whe_y", KeyID: "key_b", URL: "https://p.example/0"}); err != nil {
		t.Errorf("another key, the same url: %v", err)
	}
	a, _ := m.List(ctx, "key_a")
	b, _ := m.List(ctx, "key_b")
	if len(a) != webhooks.MaxPerKey || len(b) != 1 || a[0].ID != "whe_0" || b[0].Status != webhooks.StatusEnabled {
		t.Fatalf("lists: %d and %d endpoints", len(a), len(b))
	}
	if err := m.Delete(ctx, "whe_3"); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(ctx, "whe_3"); !errors.Is(err, webhooks.ErrNotFound) {
		t.Errorf("deleted twice: %v", err)
	}
	if err := m.Create(ctx, webhooks.Endpoint{ID: "whe_x", KeyID: "key_a", URL: "https://p.example/x"}); err != nil {
		t.Errorf("a tenth after a delete: %v", err)
	}
}

// TestMemoryProgressMovesFromItsPosition: progress and disabling name the
// position they move from; a writer that lost the endpoint changes
// nothing.
func TestMemoryProgressMovesFromItsPosition(t *testing.T) {
	ctx := context.Background()
	var m webhooks.Memory
	if err := m.Create(ctx, webhooks.Endpoint{ID: "whe_1", KeyID: "k", URL: "https://p.example/", Progress: webhooks.Progress{After: "evt_0"}}); err != nil {
		t.Fatal(err)
	}
	if err := m.SetProgress(ctx, "whe_1", "evt_0", webhooks.Progress{After: "evt_1"}); err != nil {
		t.Fatal(err)
	}
	if err := m.SetProgress(ctx, "whe_1", "evt_0", webhooks.Progress{After: "evt_9"}); !errors.Is(err, webhooks.ErrConflict) {
		t.Errorf("from a position left: %v, want ErrConflict", err)
	}
	if err := m.SetProgress(ctx, "whe_2", "", webhooks.Progress{}); !errors.Is(err, webhooks.ErrNotFound) {
		t.Errorf("no such endpoint: %v, want ErrNotFound", err)
	}
	at := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	if err := m.SetProgress(ctx, "whe_1", "evt_1", webhooks.Progress{After: "evt_1", Failures: 8, NextAttempt: at}); err != nil {
		t.Fatal(err)
	}
	if err := m.Disable(ctx, "whe_1", "evt_1", "http_503", at); err != nil {
		t.Fatal(err)
	}
	if err := m.SetProgress(ctx, "whe_1", "evt_1", webhooks.Progress{After: "evt_2"}); !errors.Is(err, webhooks.ErrConflict) {
		t.Errorf("progress of a disabled endpoint: %v, want ErrConflict", err)
	}
	ep, _ := m.Endpoint(ctx, "whe_1")
	if ep.Status != webhooks.StatusDisabled || ep.DisabledReason != "http_503" || !ep.DisabledAt.Equal(at) || ep.After != "evt_1" || ep.Failures != 0 {
		t.Fatalf("disabled: %+v", ep)
	}
	ep, err := m.Enable(ctx, "whe_1", ep.After)
	if err != nil || ep.Status != webhooks.StatusEnabled || ep.DisabledReason != "" || !ep.DisabledAt.IsZero() || ep.Progress != (webhooks.Progress{After: "evt_1"}) {
		t.Fatalf("enabled: %+v, %v", ep, err)
	}
	if ep, err := m.Enable(ctx, "whe_1", "evt_0"); err != nil || ep.After != "evt_1" {
		t.Fatalf("enabling an enabled endpoint moved it: %+v, %v", ep, err)
	}
	if _, err := m.Enable(ctx, "whe_2", ""); !errors.Is(err, webhooks.ErrNotFound) {
		t.Errorf("enabling no endpoint: %v", err)
	}
}
