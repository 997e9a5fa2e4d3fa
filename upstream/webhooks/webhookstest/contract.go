// Package webhookstest holds the cases every webhooks.Registry must pass
// (StoreContract): the in-memory one, the one in EDGE_DATA_DIR and the
// fleet's in Redis answer the same calls the same way (docs/webhooks.md,
// "The seams for what comes next"). Imported by _test.go files only.
package webhookstest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

// Open returns an empty Registry for t, closed when t ends.
type Open func(t *testing.T) webhooks.Registry

// t0 is a date the cases' endpoints carry: no store has a clock, so the
// date decides nothing and is only stored and read back.
var t0 = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

// StoreContract runs every case against a fresh Registry from open.
func StoreContract(t *testing.T, open Open) {
	cases := []struct {
		name string
		run  func(t *testing.T, r webhooks.Registry)
	}{
		{"CreateKeepsWhatItIsGiven", createKeeps},
		{"CreateLimits", createLimits},
		{"CreateRefusesATakenID", createTakenID},
		{"ListsInOrderOfCreation", listsInOrder},
		{"ProgressMovesFromItsPosition", progressFromPosition},
		{"DisableAndEnable", disableAndEnable},
		{"DeletedEndpointTakesNoWrites", deletedTakesNoWrites},
		{"OneWriterWinsAPosition", oneWriterWins},
		{"ConcurrentCreatesKeepTheLimit", concurrentCreates},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, open(t)) })
	}
}

// Endpoint is an endpoint of key numbered n, with every field set.
func Endpoint(key string, n int) webhooks.Endpoint {
	return webhooks.Endpoint{
		ID: fmt.Sprintf("whe_%s_%02d", key, n), KeyID: key,
		URL:         fmt.Sprintf("https://partner.example/%s/%d?token=x", key, n),
		Description: fmt.Sprintf("endpoint %d of %s", n, key),
		Secret:      "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		CreatedAt:   t0.Add(time.Duration(n) * time.Minute),
		Progress:    webhooks.Progress{After: "evt_0"},
	}
}

func create(t *testing.T, r webhooks.Registry, ep webhooks.Endpoint) {
	t.Helper()
	if err := r.Create(context.Background(), ep); err != nil {
		t.Fatalf("create %s: %v", ep.ID, err)
	}
}

func get(t *testing.T, r webhooks.Registry, id string) webhooks.Endpoint {
	t.Helper()
	ep, err := r.Endpoint(context.Background(), id)
	if err != nil {
		t.Fatalf("endpoint %s: %v", id, err)
	}
	return ep
}

// Same reports how got differs from want ("" when it does not): times by
// Equal, as a store may keep them in another location.
func Same(got, want webhooks.Endpoint) string {
	gt := []time.Time{got.CreatedAt, got.DisabledAt, got.NextAttempt}
	wt := []time.Time{want.CreatedAt, want.DisabledAt, want.NextAttempt}
	for i := range gt {
		if !gt[i].Equal(wt[i]) {
			return fmt.Sprintf("time %d is %s, want %s", i, gt[i], wt[i])
		}
	}
	got.CreatedAt, got.DisabledAt, got.NextAttempt = time.Time{}, time.Time{}, time.Time{}
	want.CreatedAt, want.DisabledAt, want.NextAttempt = time.Time{}, time.Time{}, time.Time{}
	if got != want {
		return fmt.Sprintf("%+v, want %+v", got, want)
	}
	return ""
}

// createKeeps: every field comes back as given, enabled whatever the
// status given.
func createKeeps(t *testing.T, r webhooks.Registry) {
	ep := Endpoint("key_a", 1)
	ep.Progress = webhooks.Progress{After: "evt_7", Failures: 2, NextAttempt: t0.Add(time.Hour)}
	in := ep
	in.Status, in.DisabledReason, in.DisabledAt = webhooks.StatusDisabled, "http_503", t0
	create(t, r, in)
	ep.Status = webhooks.StatusEnabled
	if d := Same(get(t, r, ep.ID), ep); d != "" {
		t.Fatalf("read back: %s", d)
	}
	if _, err := r.Endpoint(context.Background(), "whe_none"); !errors.Is(err, webhooks.ErrNotFound) {
		t.Errorf("no such endpoint: %v, want ErrNotFound", err)
	}
}

// createLimits: one endpoint per URL and at most MaxPerKey per key; a
// delete makes room.
func createLimits(t *testing.T, r webhooks.Registry) {
	ctx := context.Background()
	for i := range webhooks.MaxPerKey {
		create(t, r, Endpoint("key_a", i))
	}
	same := Endpoint("key_a", 0)
	same.ID = "whe_x"
	if err := r.Create(ctx, same); !errors.Is(err, webhooks.ErrExists) {
		t.Errorf("the same url again: %v, want ErrExists", err)
	}
	if err := r.Create(ctx, Endpoint("key_a", 50)); !errors.Is(err, webhooks.ErrLimit) {
		t.Errorf("an eleventh: %v, want ErrLimit", err)
	}
	other := Endpoint("key_a", 0)
	other.ID, other.KeyID = "whe_y", "key_b"
	if err := r.Create(ctx, other); err != nil {
		t.Errorf("another key, the same url: %v", err)
	}
	if err := r.Delete(ctx, Endpoint("key_a", 3).ID); err != nil {
		t.Fatal(err)
	}
	if err := r.Delete(ctx, Endpoint("key_a", 3).ID); !errors.Is(err, webhooks.ErrNotFound) {
		t.Errorf("deleted twice: %v, want ErrNotFound", err)
	}
	if err := r.Create(ctx, Endpoint("key_a", 50)); err != nil {
		t.Errorf("a tenth after a delete: %v", err)
	}
}

// createTakenID: an id is one endpoint's; a second Create of it fails
// and changes nothing (ids are random: a collision is a fault, not a
// partner's error).
func createTakenID(t *testing.T, r webhooks.Registry) {
	first := Endpoint("key_a", 1)
	create(t, r, first)
	again := Endpoint("key_b", 2)
	again.ID = first.ID
	if err := r.Create(context.Background(), again); err == nil {
		t.Fatal("a second endpoint with a taken id was created")
	}
	first.Status = webhooks.StatusEnabled
	if d := Same(get(t, r, first.ID), first); d != "" {
		t.Fatalf("the first endpoint changed: %s", d)
	}
	if l, _ := r.List(context.Background(), "key_b"); len(l) != 0 {
		t.Fatalf("key_b lists %d endpoints", len(l))
	}
}

// listsInOrder: List is a key's endpoints, oldest first; Endpoints is
// every key's, in order of creation too.
func listsInOrder(t *testing.T, r webhooks.Registry) {
	ctx := context.Background()
	var all []string
	for i, k := range []string{"key_b", "key_a", "key_b", "key_c", "key_a", "key_b"} {
		ep := Endpoint(k, 9-i) // ids and times against the order of creation
		create(t, r, ep)
		all = append(all, ep.ID)
	}
	_ = r.Delete(ctx, all[3])
	all = append(all[:3], all[4:]...)
	eps, err := r.Endpoints(ctx)
	if err != nil || fmt.Sprint(ids(eps)) != fmt.Sprint(all) {
		t.Fatalf("Endpoints: %v, %v; want %v", ids(eps), err, all)
	}
	b, err := r.List(ctx, "key_b")
	if want := []string{all[0], all[2], all[4]}; err != nil || fmt.Sprint(ids(b)) != fmt.Sprint(want) {
		t.Fatalf("List(key_b): %v, %v; want %v", ids(b), err, want)
	}
	if c, err := r.List(ctx, "key_c"); err != nil || len(c) != 0 {
		t.Fatalf("List(key_c), its one deleted: %v, %v", ids(c), err)
	}
	if b[0].Secret == "" || b[0].URL == "" {
		t.Errorf("List left out fields: %+v", b[0])
	}
}

func ids(eps []webhooks.Endpoint) []string {
	out := make([]string, len(eps))
	for i, e := range eps {
		out[i] = e.ID
	}
	return out
}

// progressFromPosition: progress names the position it moves from; a
// writer that lost the endpoint changes nothing.
func progressFromPosition(t *testing.T, r webhooks.Registry) {
	ctx := context.Background()
	ep := Endpoint("key_a", 1)
	create(t, r, ep)
	if err := r.SetProgress(ctx, ep.ID, "evt_0", webhooks.Progress{After: "evt_1"}); err != nil {
		t.Fatal(err)
	}
	if err := r.SetProgress(ctx, ep.ID, "evt_0", webhooks.Progress{After: "evt_9"}); !errors.Is(err, webhooks.ErrConflict) {
		t.Errorf("from a position left: %v, want ErrConflict", err)
	}
	if err := r.SetProgress(ctx, "whe_none", "", webhooks.Progress{}); !errors.Is(err, webhooks.ErrNotFound) {
		t.Errorf("no such endpoint: %v, want ErrNotFound", err)
	}
	p := webhooks.Progress{After: "evt_1", Failures: 3, NextAttempt: t0.Add(30 * time.Minute)}
	if err := r.SetProgress(ctx, ep.ID, "evt_1", p); err != nil {
		t.Fatal(err)
	}
	ep.Status, ep.Progress = webhooks.StatusEnabled, p
	if d := Same(get(t, r, ep.ID), ep); d != "" {
		t.Fatalf("after a failed attempt: %s", d)
	}
}

// disableAndEnable: disabling names the position too and keeps it;
// enabling resumes from the position given, failures forgotten; enabling
// an enabled endpoint leaves it as it is.
func disableAndEnable(t *testing.T, r webhooks.Registry) {
	ctx := context.Background()
	ep := Endpoint("key_a", 1)
	create(t, r, ep)
	at := t0.Add(28 * time.Hour)
	if err := r.SetProgress(ctx, ep.ID, "evt_0", webhooks.Progress{After: "evt_1", Failures: 7, NextAttempt: at}); err != nil {
		t.Fatal(err)
	}
	if err := r.Disable(ctx, ep.ID, "evt_0", "http_503", at); !errors.Is(err, webhooks.ErrConflict) {
		t.Errorf("disabled from a position left: %v, want ErrConflict", err)
	}
	if err := r.Disable(ctx, "whe_none", "", "http_503", at); !errors.Is(err, webhooks.ErrNotFound) {
		t.Errorf("disabled no endpoint: %v, want ErrNotFound", err)
	}
	if err := r.Disable(ctx, ep.ID, "evt_1", "http_503", at); err != nil {
		t.Fatal(err)
	}
	if err := r.Disable(ctx, ep.ID, "evt_1", "timeout", at); !errors.Is(err, webhooks.ErrConflict) {
		t.Errorf("disabled twice: %v, want ErrConflict", err)
	}
	if err := r.SetProgress(ctx, ep.ID, "evt_1", webhooks.Progress{After: "evt_2"}); !errors.Is(err, webhooks.ErrConflict) {
		t.Errorf("progress of a disabled endpoint: %v, want ErrConflict", err)
	}
	want := ep
	want.Status, want.DisabledReason, want.DisabledAt = webhooks.StatusDisabled, "http_503", at
	want.Progress = webhooks.Progress{After: "evt_1"}
	if d := Same(get(t, r, ep.ID), want); d != "" {
		t.Fatalf("disabled: %s", d)
	}
	if l, _ := r.List(ctx, "key_a"); len(l) != 1 || l[0].Status != webhooks.StatusDisabled {
		t.Fatalf("a disabled endpoint is listed as such: %+v", l)
	}
	got, err := r.Enable(ctx, ep.ID, "evt_1")
	want.Status, want.DisabledReason, want.DisabledAt = webhooks.StatusEnabled, "", time.Time{}
	if err != nil || Same(got, want) != "" || Same(get(t, r, ep.ID), want) != "" {
		t.Fatalf("enabled: %+v, %v; want %+v", got, err, want)
	}
	if got, err := r.Enable(ctx, ep.ID, "evt_0"); err != nil || Same(got, want) != "" {
		t.Fatalf("enabling an enabled endpoint moved it: %+v, %v", got, err)
	}
	if err := r.SetProgress(ctx, ep.ID, "evt_1", webhooks.Progress{After: "evt_2"}); err != nil {
		t.Errorf("progress once enabled again: %v", err)
	}
	if _, err := r.Enable(ctx, "whe_none", ""); !errors.Is(err, webhooks.ErrNotFound) {
		t.Errorf("enabling no endpoint: %v, want ErrNotFound", err)
	}
	// Enabled again once the feed dropped its position: from the one given.
	_ = r.Disable(ctx, ep.ID, "evt_2", "events_expired", at)
	if got, err := r.Enable(ctx, ep.ID, "evt_40"); err != nil || got.After != "evt_40" {
		t.Fatalf("enabled from another position: %+v, %v", got, err)
	}
}

// deletedTakesNoWrites: a deleted endpoint is gone for every call.
func deletedTakesNoWrites(t *testing.T, r webhooks.Registry) {
	ctx := context.Background()
	ep := Endpoint("key_a", 1)
	create(t, r, ep)
	if err := r.Delete(ctx, ep.ID); err != nil {
		t.Fatal(err)
	}
	if err := r.SetProgress(ctx, ep.ID, "evt_0", webhooks.Progress{After: "evt_1"}); !errors.Is(err, webhooks.ErrNotFound) {
		t.Errorf("progress: %v, want ErrNotFound", err)
	}
	if err := r.Disable(ctx, ep.ID, "evt_0", "timeout", t0); !errors.Is(err, webhooks.ErrNotFound) {
		t.Errorf("disable: %v, want ErrNotFound", err)
	}
	if _, err := r.Enable(ctx, ep.ID, "evt_0"); !errors.Is(err, webhooks.ErrNotFound) {
		t.Errorf("enable: %v, want ErrNotFound", err)
	}
	if _, err := r.Endpoint(ctx, ep.ID); !errors.Is(err, webhooks.ErrNotFound) {
		t.Errorf("read: %v, want ErrNotFound", err)
	}
	if eps, err := r.Endpoints(ctx); err != nil || len(eps) != 0 {
		t.Errorf("Endpoints: %v, %v", ids(eps), err)
	}
}

// oneWriterWins: of writers moving an endpoint from one position at
// once, one wins and the others change nothing (a fleet's members, a
// member and a partner's disable).
func oneWriterWins(t *testing.T, r webhooks.Registry) {
	ctx := context.Background()
	ep := Endpoint("key_a", 1)
	create(t, r, ep)
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if i == n-1 {
				errs[i] = r.Disable(ctx, ep.ID, "evt_0", "timeout", t0)
				return
			}
			errs[i] = r.SetProgress(ctx, ep.ID, "evt_0", webhooks.Progress{After: fmt.Sprintf("evt_w%d", i)})
		})
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Fatalf("writers %d and %d both moved the endpoint from evt_0", won, i)
		case err == nil:
			won = i
		case !errors.Is(err, webhooks.ErrConflict):
			t.Fatalf("writer %d: %v, want ErrConflict", i, err)
		}
	}
	got := get(t, r, ep.ID)
	switch {
	case won < 0:
		t.Fatal("no writer moved the endpoint")
	case won == n-1 && (got.Status != webhooks.StatusDisabled || got.After != "evt_0"):
		t.Fatalf("the disable won, the endpoint is %+v", got)
	case won < n-1 && (got.Status != webhooks.StatusEnabled || got.After != fmt.Sprintf("evt_w%d", won)):
		t.Fatalf("writer %d won, the endpoint is %+v", won, got)
	}
}

// concurrentCreates: creates racing for one key's last places never
// make more than MaxPerKey, nor two endpoints of one URL.
func concurrentCreates(t *testing.T, r webhooks.Registry) {
	ctx := context.Background()
	for i := range webhooks.MaxPerKey - 2 {
		create(t, r, Endpoint("key_a", i))
	}
	const n = 6
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ep := Endpoint("key_a", 20+i)
			if i%2 == 1 { // two by two the same URL
				ep.URL = Endpoint("key_a", 20+i-1).URL
			}
			errs[i] = r.Create(ctx, ep)
		})
	}
	wg.Wait()
	made := 0
	for i, err := range errs {
		switch {
		case err == nil:
			made++
		case !errors.Is(err, webhooks.ErrLimit) && !errors.Is(err, webhooks.ErrExists):
			t.Fatalf("create %d: %v", i, err)
		}
	}
	l, err := r.List(ctx, "key_a")
	if err != nil || made != 2 || len(l) != webhooks.MaxPerKey {
		t.Fatalf("%d creates won, %d listed (%v), want 2 and %d", made, len(l), err, webhooks.MaxPerKey)
	}
	urls := map[string]bool{}
	for _, e := range l {
		if urls[e.URL] {
			t.Fatalf("two endpoints of %s", e.URL)
		}
		urls[e.URL] = true
	}
}
