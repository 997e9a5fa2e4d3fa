package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/redisconn/redistest"
	"github.com/partner-edge/partner-edge/upstream/webhooks"
	"github.com/partner-edge/partner-edge/upstream/webhooks/boltwebhooks"
)

// docs/webhooks.md, "Delivery and retries" and "Lease", through the built
// binary: delivery resumes where it stopped when the edge delivering it
// dies.

// deliveredAttempts is the partner_edge_webhooks_attempts_total{outcome=
// "delivered"} of the edge whose admin listener is admin.
func deliveredAttempts(t *testing.T, admin string) float64 {
	t.Helper()
	n, _ := value(scrape(t, admin+"/metrics"), `partner_edge_webhooks_attempts_total{outcome="delivered"}`)
	return n
}

// A fleet of three on a real redis-server, the PMS churning: the endpoint
// created through one member is delivered by the member holding its lease
// (the others deliver nothing). That member is killed (SIGKILL) while an
// attempt is in flight (the receiver holds it unanswered); another member
// takes the lease once it expires, not before, within a lease and a
// third, and the receiver gets every event of GET /v1/events, in feed
// order, verified by the reference library, only the event in flight
// twice.
func TestWebhooksFleetMemberKilledMidDelivery(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the edge and runs a Redis and three edges; a takeover waits out a 30 s lease")
	}
	srv := redistest.Start(t) // the real redis-server (required under CI=true)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	pms := churningPMS(t)
	k := hookKey(t)
	edges := startFleetWith(t, buildEdge(t), 3, k.file, pms.liveURL, "EDGE_REDIS_URL="+srv.URL(),
		"EDGE_CACHE_TTL=500ms", "EDGE_ACCESS_LOG=off", "EDGE_WEBHOOK_ALLOW_CIDRS=127.0.0.0/8", "EDGE_WEBHOOK_ALLOW_HTTP=true")
	t.Cleanup(func() {
		if t.Failed() {
			for i, e := range edges {
				t.Logf("member %d log:\n%s", i, e.stderr.String())
			}
		}
	})
	p := partner{edges[0].base, k.live}
	_, cursor := p.list(t) // the endpoint's events are after it

	rc := newHookReceiver(t)
	ep := p.createHook(t, rc.url)
	rc.set(ep.Secret)
	leaseKey := "pe:wh1:{aurora}:l:" + ep.ID // redishooks: a key per endpoint, its value the holder's member id

	testkit.Eventually(t, "five events delivered", func() bool { return len(rc.delivered()) >= 5 })
	// The holder: the one member that delivered (the lease never moved
	// while all lived) and the member id the lease key names.
	holder := -1
	for i, e := range edges {
		if deliveredAttempts(t, e.admin) > 0 {
			if holder >= 0 {
				t.Fatalf("members %d and %d both delivered the endpoint's events while all lived", holder, i)
			}
			holder = i
		}
	}
	if holder < 0 {
		t.Fatal("five events arrived; no member counts a delivery")
	}
	member, err := rdb.Get(context.Background(), leaseKey).Result()
	if err != nil || member == "" {
		t.Fatalf("the lease %s: %q, %v; want the holder's member id", leaseKey, member, err)
	}

	// Kill the holder while its attempt is held at the receiver.
	rc.hold.Store(true)
	var inFlight string
	testkit.Eventually(t, "an attempt held at the receiver", func() bool {
		_, inFlight = rc.arrivals()
		return inFlight != ""
	})
	left, err := rdb.PTTL(context.Background(), leaseKey).Result()
	if err != nil || left <= 0 {
		t.Fatalf("the lease's time left: %v, %v", left, err)
	}
	if err := edges[holder].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	<-edges[holder].exited
	t.Logf("member %d (lease member %s) killed, %s of its lease left, %s in flight", holder, member, left, inFlight)
	alive := append(append([]*edgeProc(nil), edges[:holder]...), edges[holder+1:]...)
	p = partner{alive[0].base, k.live}

	// Another member takes over: the event in flight arrives again, then
	// the feed goes on.
	var resent time.Time
	testkit.Eventually(t, "the event in flight sent again and five more after it", func() bool {
		got, _ := rc.arrivals()
		n, after := 0, 0
		for _, a := range got {
			if a.id == inFlight {
				n++
				if n == 2 {
					resent = a.at
				}
			} else if n == 2 {
				after++
			}
		}
		return n >= 2 && after >= 5
	})
	takeover := resent.Sub(killed)
	t.Logf("the event in flight arrived again %s after the kill", takeover.Round(time.Millisecond))
	if slack := time.Second; takeover < left-slack {
		t.Errorf("another member sent the event %s after the kill, with %s of the killed member's lease left", takeover, left)
	}
	if bound := webhooks.DefaultLeaseTTL + webhooks.DefaultLeaseTTL/3 + 10*time.Second; takeover > bound {
		t.Errorf("the takeover took %s; want within a lease and a third (%s, with slack)", takeover, bound)
	}
	if now, err := rdb.Get(context.Background(), leaseKey).Result(); err != nil || now == member {
		t.Errorf("the lease after the takeover: %q, %v; want another member's than %q", now, err, member)
	}
	delivering := 0
	for _, e := range alive {
		if deliveredAttempts(t, e.admin) > 0 {
			delivering++
		}
	}
	if delivering != 1 {
		t.Errorf("%d surviving members delivered; want the one that took the lease", delivering)
	}

	// Every event once, in feed order, but the one in flight: twice, its
	// second arrival right after its first.
	got, _ := rc.arrivals()
	var ids []string
	seen := map[string]int{}
	bodies := map[string]string{}
	for i, a := range got {
		if seen[a.id]++; seen[a.id] == 1 {
			ids = append(ids, a.id)
			bodies[a.id] = rc.body(a.id)
			continue
		}
		if a.id != inFlight || got[i-1].id != inFlight {
			t.Errorf("%s arrived again (arrival %d); only %s, in flight at the kill, may, right after its first", a.id, i, inFlight)
		}
	}
	if seen[inFlight] != 2 {
		t.Errorf("the event in flight arrived %d times; want twice", seen[inFlight])
	}
	assertFeedRun(t, p.feedAfter(t, cursor), ids, bodies)
}

// recordedProgress is the progress of endpoint id as the edge last
// recorded it in dir's webhooks.db, read from a copy (the edge holds the
// file's lock); false while the copy does not open.
func recordedProgress(t *testing.T, dir, id string) (webhooks.Progress, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, boltwebhooks.FileName))
	if err != nil {
		return webhooks.Progress{}, false
	}
	cp := t.TempDir()
	if err := os.WriteFile(filepath.Join(cp, boltwebhooks.FileName), b, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := boltwebhooks.Open(cp)
	if err != nil {
		return webhooks.Progress{}, false
	}
	defer st.Close()
	ep, err := st.Endpoint(context.Background(), id)
	return ep.Progress, err == nil
}

// A single edge with EDGE_DATA_DIR, the PMS churning: the receiver answers
// 503, so the first event waits for its retry (5 s); the edge is killed
// (SIGKILL) once that is recorded and started again on the same data
// directory, the receiver now answering 204. The same webhook-id arrives
// after the restart, not before its scheduled time; the endpoint keeps its
// id, URL and secret (the reference library verifies with the secret
// shown at creation); the events after it follow in feed order, none
// missing, none twice.
func TestWebhooksRestartMidSchedule(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the edge and waits for a retry across a restart")
	}
	bin := buildEdge(t)
	pms := churningPMS(t)
	k := hookKey(t)
	dir := t.TempDir()
	env := feedEdgeEnv(pms, k, "EDGE_DATA_DIR="+dir, "EDGE_WEBHOOK_ALLOW_CIDRS=127.0.0.0/8", "EDGE_WEBHOOK_ALLOW_HTTP=true")
	edge := startEdgeProc(t, bin, env)
	p := partner{"http://" + edge.addr + "/v1/", k.live}
	_, cursor := p.list(t)

	rc := newHookReceiver(t)
	rc.answer.Store(http.StatusServiceUnavailable)
	ep := p.createHook(t, rc.url)
	rc.set(ep.Secret)

	var first arrival
	testkit.Eventually(t, "the first event refused once", func() bool {
		got, _ := rc.arrivals()
		if len(got) > 0 {
			first = got[0]
		}
		return len(got) > 0
	})
	var pr webhooks.Progress
	testkit.Eventually(t, "the failed attempt recorded in EDGE_DATA_DIR", func() bool {
		var ok bool
		pr, ok = recordedProgress(t, dir, ep.ID)
		return ok && pr.Failures > 0
	})
	if pr.Failures != 1 {
		t.Fatalf("%d failed attempts recorded; want the first alone", pr.Failures)
	}
	if err := edge.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-edge.exited
	killed := time.Now()
	due := first.at.Add(webhooks.Retries[0])
	if got, _ := rc.arrivals(); len(got) != 1 || killed.After(due) {
		t.Fatalf("the edge was killed %s after the first attempt, after %d attempts; the test wants it killed before the retry",
			killed.Sub(first.at), len(got))
	}
	if pr.NextAttempt.Before(due.Add(-time.Second)) || pr.NextAttempt.After(due.Add(5*time.Second)) {
		t.Errorf("the next attempt is recorded for %s; the first failed at %s, so want about %s", pr.NextAttempt, first.at, due)
	}
	rc.answer.Store(http.StatusNoContent)
	edge = startEdgeProc(t, bin, env)
	p = partner{"http://" + edge.addr + "/v1/", k.live}
	restarted := time.Now()
	t.Logf("the edge serves again %s after the first attempt; its retry is due %s after it",
		restarted.Sub(first.at).Round(time.Millisecond), webhooks.Retries[0])

	testkit.Eventually(t, "the first event and eight after it delivered", func() bool { return len(rc.delivered()) >= 9 })
	got, _ := rc.arrivals()
	if got[1].id != first.id || got[1].status != http.StatusNoContent {
		t.Fatalf("after the restart %s arrived (%d); want %s again, delivered", got[1].id, got[1].status, first.id)
	}
	if slack := 250 * time.Millisecond; got[1].at.Before(due.Add(-slack)) || got[1].at.Before(killed) {
		t.Errorf("the retry arrived %s after the first attempt; want no sooner than %s, after the restart",
			got[1].at.Sub(first.at), webhooks.Retries[0])
	}
	ids := rc.delivered()
	bodies := map[string]string{}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Errorf("%s delivered twice: nothing was in flight at the kill", id)
		}
		seen[id] = true
		bodies[id] = rc.body(id)
	}
	assertFeedRun(t, p.feedAfter(t, cursor), ids, bodies)

	hs := p.listHooks(t)
	if len(hs) != 1 || hs[0].ID != ep.ID || hs[0].URL != rc.url || hs[0].Status != "enabled" || hs[0].Secret != "" {
		t.Errorf("the endpoints after the restart: %+v; want %s for %s, enabled, its secret not shown", hs, ep.ID, rc.url)
	}
}
