package cache

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	pmsclient "github.com/partner-edge/partner-edge/upstream/pms"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream"
)

// Prime walks before anyone asks, walks again after each failure (the
// refresh backoff: 1 s, 2 s, 4 s...), and stops once a snapshot is held;
// Close ends it while it waits.
func TestPrimeWalksBeforeAnyoneAsksAndRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := newVersioned(3)
		inner.fail.Store(&upstream.Error{Kind: upstream.BadGateway, Err: errors.New("pms down")})
		c := New(inner, Config{TTL: time.Minute, RefreshBackoff: time.Second, Now: onTheDay()})
		defer c.Close()
		c.Prime()
		synctest.Wait()
		if n := inner.snapCalls.Load(); n != 1 {
			t.Fatalf("%d walks at start, want 1 before anyone asks", n)
		}
		for _, step := range []struct {
			wait  time.Duration
			walks int64
		}{{time.Second - time.Nanosecond, 1}, {time.Nanosecond, 2}, {2 * time.Second, 3}, {4 * time.Second, 4}} {
			time.Sleep(step.wait)
			synctest.Wait()
			if n := inner.snapCalls.Load(); n != step.walks {
				t.Fatalf("%d walks, want %d (backing off 1 s, 2 s, 4 s)", n, step.walks)
			}
		}
		inner.fail.Store(nil)
		time.Sleep(8 * time.Second)
		synctest.Wait()
		if n := inner.snapCalls.Load(); n != 5 || c.Len() != 3 {
			t.Fatalf("%d walks, %d held; want the fifth walk's snapshot", n, c.Len())
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := inner.snapCalls.Load(); n != 5 {
			t.Fatalf("%d walks; want none once a snapshot is held (refreshes are the callers')", n)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		inner := newVersioned(3)
		inner.fail.Store(&upstream.Error{Kind: upstream.BadGateway})
		c := New(inner, Config{TTL: time.Minute, Now: onTheDay()})
		c.Prime()
		synctest.Wait()
		c.Close() // while Prime waits to walk again: it ends (goleak checks)
	})
}

// A PMS that refuses the token is an ERROR line naming the setting, the
// class and the status, never the PMS's body, and at most one a minute
// while it lasts (docs/contract.md section 22); an address that refuses
// connections names the address's setting.
func TestRefusalIsAnErrorOnceAMinute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var status atomic.Int32
		status.Store(http.StatusUnauthorized)
		pms := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("X-Pms-Secret", "HEADER-BYTES")
			w.WriteHeader(int(status.Load()))
			_, _ = w.Write([]byte(`{"error":"unauthorized","hint":"BODY-BYTES"}`))
		})
		now := onTheDay() // the client, its walks and the cache share one clock
		client, err := pmsclient.NewClient(pmsclient.ClientConfig{BaseURL: "http://pms.test",
			Transport: testkit.InProcess{Handler: pms}, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		log, logs := testkit.NewLogger()
		c := New(pmsclient.NewDirect(client, pmsclient.DirectOptions{Brand: "aurora", Now: now}),
			Config{TTL: time.Minute, TokenSetting: "PMS_TOKEN", URLSetting: "PMS_BASE_URL", Logger: log, Now: now})
		defer c.Close()
		start := time.Now()
		c.Prime()
		synctest.Wait()
		lines := func() []string {
			var out []string
			for l := range strings.SplitSeq(logs.String(), "\n") {
				if strings.Contains(l, "level=ERROR") {
					out = append(out, l)
				}
			}
			return out
		}
		first := lines()
		if len(first) != 1 || !strings.Contains(first[0], "check PMS_TOKEN") ||
			!strings.Contains(first[0], "class=credentials_refused") || !strings.Contains(first[0], "cause=http_401") {
			t.Fatalf("at start: %q; want one ERROR naming PMS_TOKEN with its class and status", first)
		}
		for time.Since(start) < 3*time.Minute && len(lines()) < 2 {
			time.Sleep(time.Second)
			synctest.Wait()
		}
		if again := time.Since(start); len(lines()) != 2 || again < time.Minute || again > 90*time.Second {
			t.Fatalf("%d ERROR lines after %v; want the second after one minute (walks retried meanwhile)", len(lines()), again)
		}
		if strings.Contains(logs.String(), "BYTES") {
			t.Errorf("the log quotes what the PMS sent:\n%s", logs.String())
		}
	})

	// Nothing listens: the connection is refused.
	addr := testkit.RefusingAddr(t) // nothing listens: the connection is refused
	now := onTheDay()
	client, err := pmsclient.NewClient(pmsclient.ClientConfig{BaseURL: "http://" + addr, Now: now,
		Retry: pmsclient.RetryConfig{WaitMin: time.Millisecond, WaitMax: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	log, logs := testkit.NewLogger()
	c := New(pmsclient.NewDirect(client, pmsclient.DirectOptions{Brand: "aurora", Now: now}),
		Config{TTL: time.Minute, TokenSetting: "PMS_TOKEN", URLSetting: "PMS_BASE_URL", Logger: log, Now: now})
	defer c.Close()
	if _, err := c.Snapshot(context.Background()); err == nil {
		t.Fatal("a walk of nothing succeeded")
	}
	if n := logs.Count("level=ERROR"); n != 1 || !strings.Contains(logs.String(), "check PMS_BASE_URL") ||
		!strings.Contains(logs.String(), "cause=connection_refused") {
		t.Fatalf("%d ERROR lines; want one naming PMS_BASE_URL, cause connection_refused:\n%s", n, logs.String())
	}
}

// The next walk starts TTL after the previous one ENDED: a walk of 20 s
// with a TTL of 30 s is fresh until 30 s after its end, and a caller
// leaving before a walk ends is told to come back when the last walk's
// length says this one will be done.
func TestNextWalkCountsFromTheEndOfTheLast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := newVersioned(3)
		slow := inner.snapshot
		inner.snapshot = func(ctx context.Context) (*upstream.Snapshot, error) {
			time.Sleep(20 * time.Second)
			return slow(ctx)
		}
		c := New(inner, Config{TTL: 30 * time.Second, Stale: 5 * time.Minute, Now: onTheDay()})
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var ue *upstream.Error
		if _, err := c.Snapshot(ctx); !errors.As(err, &ue) || ue.Kind != upstream.Unavailable || ue.RetryAfter != 10*time.Second {
			t.Fatalf("first walk, caller's deadline: %v; want Unavailable, Retry-After 10 s (no walk's length known yet: the time it has run)", err)
		}
		cancel()
		time.Sleep(10 * time.Second) // the first walk ends: 20 s
		synctest.Wait()
		ended := time.Now()
		time.Sleep(30*time.Second - time.Nanosecond)
		if _, err := c.Snapshot(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := inner.snapCalls.Load(); n != 1 {
			t.Fatalf("%d walks %v after the first ended; want none before TTL", n, time.Since(ended))
		}
		time.Sleep(time.Nanosecond)
		if _, err := c.Snapshot(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		if n := inner.snapCalls.Load(); n != 2 {
			t.Fatalf("%d walks at TTL after the first ended; want the second", n)
		}
		if ra := c.walks.retryAfter(c.cfg.Now(), c.cfg.LastWalk); ra != 15*time.Second {
			t.Fatalf("5 s into a walk after one of 20 s: Retry-After %v; want 15 s", ra)
		}
	})
}
