package boltwebhooks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/partner-edge/partner-edge/upstream/webhooks"
	"github.com/partner-edge/partner-edge/upstream/webhooks/webhookstest"
)

// openTemp is a Store in a directory of its own, closed when t ends.
func openTemp(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestProgressSharesCommits: endpoints recording progress at once (a
// walk's events delivered to each) share transactions, rather than
// committing one each, and each one's progress is there.
func TestProgressSharesCommits(t *testing.T) {
	const endpoints = 50
	ctx := context.Background()
	s := openTemp(t)
	var eps []webhooks.Endpoint
	for i := range endpoints {
		ep := webhookstest.Endpoint(fmt.Sprintf("key_%d", i/10), i%10)
		if err := s.Create(ctx, ep); err != nil {
			t.Fatal(err)
		}
		eps = append(eps, ep)
	}
	before := lastTx(t, s)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, ep := range eps {
		wg.Go(func() {
			<-start
			if err := s.SetProgress(ctx, ep.ID, "evt_0", webhooks.Progress{After: "evt_1"}); err != nil {
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	if n := lastTx(t, s) - before; n >= endpoints {
		t.Errorf("%d endpoints' progress took %d commits, want fewer: shared", endpoints, n)
	}
	for _, ep := range eps {
		if got, err := s.Endpoint(ctx, ep.ID); err != nil || got.After != "evt_1" {
			t.Errorf("%s: after %q, %v; want evt_1", ep.ID, got.After, err)
		}
	}
}

// lastTx is the id of the last transaction committed to s's file.
func lastTx(t *testing.T, s *Store) int {
	t.Helper()
	var id int
	if err := s.db.View(func(tx *bolt.Tx) error { id = tx.ID(); return nil }); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestDecodedNeverServesAnUncommittedValue: a change whose transaction is
// rolled back after its write (as bbolt's Batch does when another change
// of the batch fails) leaves what is read as it was, although the value
// written was decoded and kept; and what was kept serves reads after.
func TestDecodedNeverServesAnUncommittedValue(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	ep := webhookstest.Endpoint("key_a", 1)
	if err := s.Create(ctx, ep); err != nil {
		t.Fatal(err)
	}
	rolledBack := errors.New("rolled back")
	_, err := s.changeIn(func(fn func(*bolt.Tx) error) error {
		return s.db.Update(func(tx *bolt.Tx) error {
			if err := fn(tx); err != nil {
				return err
			}
			return rolledBack
		})
	}, ep.ID, webhooks.Progressed("evt_0", webhooks.Progress{After: "evt_9"}))
	if !errors.Is(err, rolledBack) {
		t.Fatalf("the change: %v", err)
	}
	for range 2 { // decoded, then as kept
		if got, err := s.Endpoint(ctx, ep.ID); err != nil || got.After != "evt_0" {
			t.Fatalf("after a rolled back change: after %q, %v; want evt_0", got.After, err)
		}
		if eps, err := s.Endpoints(ctx); err != nil || len(eps) != 1 || eps[0].After != "evt_0" {
			t.Fatalf("the list after a rolled back change: %+v, %v", eps, err)
		}
	}
	if err := s.SetProgress(ctx, ep.ID, "evt_0", webhooks.Progress{After: "evt_1"}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Endpoint(ctx, ep.ID); err != nil || got.After != "evt_1" {
		t.Fatalf("after a change: after %q, %v; want evt_1", got.After, err)
	}
}

// TestProgressAloneCommitsAtOnce: an endpoint recording its progress while
// no other does (one catching up alone) commits at once, not after the
// delay it would wait for others to join (made an hour here).
func TestProgressAloneCommitsAtOnce(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	s.db.MaxBatchDelay = time.Hour
	ep := webhookstest.Endpoint("key_a", 1)
	if err := s.Create(ctx, ep); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for i := range 3 {
			if err := s.SetProgress(ctx, ep.ID, fmt.Sprintf("evt_%d", i), webhooks.Progress{After: fmt.Sprintf("evt_%d", i+1)}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute): // a bound on a failure, far above a commit's time
		t.Fatal("progress recorded alone waited for others to join it")
	}
	if got, err := s.Endpoint(ctx, ep.ID); err != nil || got.After != "evt_3" {
		t.Fatalf("after %q, %v; want evt_3", got.After, err)
	}
}
